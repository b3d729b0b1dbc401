import CCurl
@testable import FTPScheme
import Foundation
import Loader
import Testing

/// What libcurl's result code alone cannot tell, told by the server's reply and the transfer's direction.
@Suite("ftp: libcurl's failures as LoadError codes")
struct CurlErrorMappingTests {
    private let url = URL(string: "ftp://127.0.0.1/dir/f.txt")!
    // Each call gives libcurl's message: with none, the mapping asks libcurl for its words, and libcurl is
    // loaded only by the first FTP load.

    @Test("A refused download is not a lost connection: 530 wants a login, 425 and 426 lost the data connection, others are unavailable",
          arguments: [(530, LoadError.Code.userAuthenticationRequired), (425, .networkConnectionLost), (426, .networkConnectionLost),
                      (450, .resourceUnavailable), (451, .resourceUnavailable), (0, .resourceUnavailable)])
    func refusedDownload(reply: Int, code: LoadError.Code) {
        let error = CurlErrorMapping.map(CURLE_FTP_COULDNT_RETR_FILE, message: "libcurl's words", url: url, serverReply: reply, isUpload: false)
        #expect(error.code == code)
        #expect(error.url == url)
        #expect(reply == 0 || error.reason?.contains("answered \(reply)") == true, "\(error)")
    }

    @Test("A folder of the path that cannot be entered: nothing to read for a download, nothing can be made for an upload")
    func folderNotEntered() {
        #expect(CurlErrorMapping.map(CURLE_REMOTE_ACCESS_DENIED, message: "libcurl's words", url: url, serverReply: 550, isUpload: false).code == .fileDoesNotExist)
        #expect(CurlErrorMapping.map(CURLE_REMOTE_ACCESS_DENIED, message: "libcurl's words", url: url, serverReply: 550, isUpload: true).code == .cannotCreateFile)
        #expect(CurlErrorMapping.map(CURLE_REMOTE_FILE_NOT_FOUND, message: "libcurl's words", url: url, serverReply: 550, isUpload: false).code == .fileDoesNotExist)
    }

    @Test("An upload the server refuses in its final reply (451 where 226 was due) is not stored: cannotWriteToFile, not a cut body")
    func uploadRefusedAtItsEnd() {
        let refused = CurlErrorMapping.map(CURLE_PARTIAL_FILE, message: "server did not report OK, got 451", url: url, serverReply: 451, isUpload: true)
        #expect(refused.code == .cannotWriteToFile && refused.reason?.contains("answered 451") == true, "\(refused)")
        #expect(CurlErrorMapping.map(CURLE_PARTIAL_FILE, message: "libcurl's words", url: url, serverReply: 0, isUpload: false).code == .networkConnectionLost)
    }

    @Test("Codes once unmapped (unknown, exit 99): REST or TYPE refused, the proxy's name or the proxy itself",
          arguments: [(CURLE_FTP_COULDNT_USE_REST, LoadError.Code.resourceUnavailable), (CURLE_FTP_COULDNT_SET_TYPE, .badServerResponse),
                      (CURLE_COULDNT_RESOLVE_PROXY, .cannotFindHost), (CURLE_PROXY, .cannotConnectToHost),
                      (CURLE_FTP_PRET_FAILED, .badServerResponse), (CURLE_FTP_BAD_FILE_LIST, .badServerResponse)])
    func formerlyUnknown(code: CURLcode, expected: LoadError.Code) {
        let error = CurlErrorMapping.map(code, message: "libcurl's words", url: url, serverReply: 0, isUpload: false)
        #expect(error.code == expected && error.url == url)
    }

    @Test("A refused certificate is told apart by libcurl's words, as HTTPS tells it apart",
          arguments: [("SSL certificate problem: certificate has expired", LoadError.Code.serverCertificateHasBadDate),
                      ("SSL certificate problem: certificate is not yet valid", .serverCertificateHasBadDate),
                      ("SSL: no alternative certificate subject name matches target host name '127.0.0.1'", .serverCertificateWrongHost),
                      ("SSL certificate problem: unable to get local issuer certificate", .serverCertificateUntrusted)])
    func certificates(message: String, code: LoadError.Code) {
        #expect(CurlErrorMapping.map(CURLE_PEER_FAILED_VERIFICATION, message: message, url: url, serverReply: 0, isUpload: false).code == code)
    }
}
