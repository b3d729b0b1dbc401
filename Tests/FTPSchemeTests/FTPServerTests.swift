import Testing

/// Every test that talks to the FTP servers, one at a time. pyftpdlib serves them all from one
/// single-threaded loop; run side by side with the 512 MiB transfers, an FTPS handshake once waited there
/// past libcurl's 30 s limit (seen in CI, not locally).
@Suite("ftp: against pyftpdlib, one test at a time", .serialized)
struct FTPServerTests {}
