#!/usr/bin/env python3
"""The FTP servers of the tests, on 127.0.0.1 only (pyftpdlib): plain, explicit FTPS (AUTH TLS), a slow
one (downloads throttled), one that drops the data connection mid-file, one that writes each login, QUIT,
MDTM and closed control connection to ROOT/counted-events and hangs up on the command after a download of
then-hang-up.txt (for the tests of kept connections), a sixth like it for the CLI's tests, and explicit FTPS that
wants a client certificate from the CA beside CERT (ca.pem) on its connections; one that never answers QUIT, and one
that sends each 226 (transfer complete) 15 s late; and explicit FTPS speaking TLS 1.2 alone, and TLS 1.3 alone. Usage:
    ftp-server.py ROOT CERT KEY ENV_FILE
ROOT/pub is the anonymous (read-only) area; user "user" with password "secret" may write in ROOT/pub/upload. On the
plain server, a download of busy-N-ID.txt (any N and ID) is refused with 450 the first N times for that name, then
sends hello.txt (for the tests of retries), and an upload named refused-at-end-* takes the data, then answers 451 where
226 was due (removing what it stored), as a server whose disk failed at the close.
The ports chosen are written to ENV_FILE once every server listens."""
import os
import sys

from pyftpdlib.authorizers import DummyAuthorizer
from pyftpdlib.handlers import DTPHandler, FTPHandler, TLS_FTPHandler, ThrottledDTPHandler
from pyftpdlib.ioloop import IOLoop
from pyftpdlib.servers import FTPServer
from OpenSSL import SSL

root, cert, key, env_file = sys.argv[1:5]

authorizer = DummyAuthorizer()
authorizer.add_anonymous(root + "/pub")
authorizer.add_user("user", "secret", root + "/pub", perm="elradfmwMT")


class SlowDTP(ThrottledDTPHandler):
    write_limit = 8192  # bytes per second sent to the client: a 20 kB file takes about a second


class CuttingDTP(DTPHandler):
    """Sends about the first 100 kB of a file, then drops the data connection (and sends nothing more)."""
    ac_out_buffer_size = 8192

    def use_sendfile(self):
        return False

    def send(self, data):
        if getattr(self, "cut_sent", 0) >= 100_000:
            if not getattr(self, "cut_scheduled", False):
                self.cut_scheduled = True
                self.ioloop.call_later(0.2, self.close)
            return 0
        sent = super().send(data)
        self.cut_sent = getattr(self, "cut_sent", 0) + sent
        return sent


class BusyHandler(FTPHandler):
    """Refuses RETR of busy-N-ID.txt with "450" the first N times per name (a server that is busy for a while), then
    sends hello.txt in its place."""
    refused = {}
    # What a busy file's download sends once the server is no longer busy.
    stand_in = os.path.join(root, "pub", "hello.txt")

    @staticmethod
    def busy_count(file):
        """N for a busy-N-ID.txt path, else None."""
        name = os.path.basename(file)
        parts = name.split("-")
        return int(parts[1]) if name.startswith("busy-") and len(parts) >= 3 and parts[1].isdigit() else None

    def ftp_SIZE(self, path):
        # The size of the file that stands in for it.
        return super().ftp_SIZE(BusyHandler.stand_in if self.busy_count(path) is not None else path)

    def ftp_STOR(self, file, mode="w"):
        self.refusing_at_end = file if os.path.basename(file).startswith("refused-at-end-") else None
        return super().ftp_STOR(file, mode)

    def respond(self, resp, *args, **kwargs):
        refused = getattr(self, "refusing_at_end", None)
        if refused is not None and resp.startswith("226"):
            self.refusing_at_end = None
            try:
                os.remove(refused)
            except OSError:
                pass
            resp = "451 Requested action aborted: local error in processing."
        super().respond(resp, *args, **kwargs)

    def ftp_RETR(self, file):
        count = self.busy_count(file)
        if count is not None:
            name = os.path.basename(file)
            if BusyHandler.refused.get(name, 0) < count:
                BusyHandler.refused[name] = BusyHandler.refused.get(name, 0) + 1
                self.respond("450 Busy: try again later.")
                return
            file = BusyHandler.stand_in
        return super().ftp_RETR(file)


class SilentToQuitHandler(FTPHandler):
    """Never answers QUIT, and keeps the connection open (until its idle timeout): as a server gone silent."""
    def ftp_QUIT(self, line):
        pass


class LateAcknowledgingHandler(FTPHandler):
    """Sends each 226 (transfer complete) 15 s late, as a server that syncs a file to disk before it says so."""
    def respond(self, resp, *args, **kwargs):
        if resp.startswith("226"):
            parent = super()
            self.ioloop.call_later(15, lambda: None if self._closed else parent.respond(resp, *args, **kwargs))
        else:
            super().respond(resp, *args, **kwargs)


class CountingHandler(FTPHandler):
    """Writes "login USER PORT" when a login succeeds, "quit PORT" when the client says QUIT, "mdtm PORT" when it
    asks a file's time, and "closed PORT" when a control connection ends (PORT: the client's, which tells the
    connections apart). Closes a connection idle for 10 s itself (pyftpdlib's default is 300), so that the tests
    see a client meet a kept connection the server has dropped."""
    timeout = 10
    events = root + "/counted-events"

    def record(self, event):
        with open(self.events, "a") as out:
            out.write("%s %d\n" % (event, self.remote_port))

    def on_login(self, username):
        self.record("login " + username)

    def on_file_sent(self, file):
        # The next command meets a server that is going away, as when a kept connection times out at the
        # moment the client reuses it.
        if file.endswith("/then-hang-up.txt"):
            self.hang_up_next = True

    def pre_process_command(self, line, cmd, arg):
        if getattr(self, "hang_up_next", False):
            self.record("hung-up")
            self.respond("421 Service not available, closing control connection.")
            self.close_when_done()
            return
        return super().pre_process_command(line, cmd, arg)

    def ftp_MDTM(self, path):
        self.record("mdtm")
        return super().ftp_MDTM(path)

    def ftp_QUIT(self, line):
        self.record("quit")
        return super().ftp_QUIT(line)

    def on_disconnect(self):
        self.record("closed")


class CountingForCLI(CountingHandler):
    """The same, writing to ROOT/counted-cli-events: the CLI's tests run beside the library's."""
    events = root + "/counted-cli-events"


def client_certificate_context():
    """A server TLS context that takes only clients showing a certificate the test CA signed (pyOpenSSL's, as
    pyftpdlib's TLS handler uses)."""
    context = SSL.Context(SSL.TLS_SERVER_METHOD)
    context.use_certificate_chain_file(cert)
    context.use_privatekey_file(key)
    context.load_verify_locations(os.path.join(os.path.dirname(cert), "ca.pem"))
    context.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT, lambda connection, x509, errno, depth, ok: bool(ok))
    # Clients resume the control connection's TLS session on the data connection, which OpenSSL refuses on a
    # context that checks client certificates unless the context has a session id.
    context.set_session_id(b"loader-ftps-mtls")
    return context


def one_version_context(version):
    """A TLS context that speaks one TLS version alone (pyOpenSSL's constant, such as SSL.TLS1_2_VERSION), for the tests
    of the lowest and highest versions a client accepts."""
    context = SSL.Context(SSL.TLS_SERVER_METHOD)
    context.use_certificate_chain_file(cert)
    context.use_privatekey_file(key)
    context.set_min_proto_version(version)
    context.set_max_proto_version(version)
    return context


def handler(base, dtp=None, tls=False, client_certificates=False, only_version=None):
    class Handler(base):
        pass
    Handler.authorizer = authorizer
    Handler.passive_ports = range(51000, 51400)
    Handler.permit_foreign_addresses = False
    Handler.banner = "loader test FTP server"
    if dtp is not None:
        Handler.dtp_handler = dtp
    if tls:
        Handler.certfile = cert
        Handler.keyfile = key
        Handler.tls_control_required = True
        Handler.tls_data_required = True
    if client_certificates:
        Handler.ssl_context = client_certificate_context()
    if only_version is not None:
        Handler.ssl_context = one_version_context(only_version)
    return Handler


ioloop = IOLoop.instance()
servers = {
    "FTP_PORT": FTPServer(("127.0.0.1", 0), handler(BusyHandler), ioloop=ioloop, backlog=1024),
    "FTPS_PORT": FTPServer(("127.0.0.1", 0), handler(TLS_FTPHandler, tls=True), ioloop=ioloop, backlog=1024),
    "FTP_SLOW_PORT": FTPServer(("127.0.0.1", 0), handler(FTPHandler, dtp=SlowDTP), ioloop=ioloop, backlog=1024),
    "FTP_CUT_PORT": FTPServer(("127.0.0.1", 0), handler(FTPHandler, dtp=CuttingDTP), ioloop=ioloop, backlog=1024),
    "FTP_SILENT_QUIT_PORT": FTPServer(("127.0.0.1", 0), handler(SilentToQuitHandler), ioloop=ioloop, backlog=1024),
    "FTP_LATE_226_PORT": FTPServer(("127.0.0.1", 0), handler(LateAcknowledgingHandler), ioloop=ioloop, backlog=1024),
    "FTP_COUNTED_PORT": FTPServer(("127.0.0.1", 0), handler(CountingHandler), ioloop=ioloop, backlog=1024),
    "FTP_COUNTED_CLI_PORT": FTPServer(("127.0.0.1", 0), handler(CountingForCLI), ioloop=ioloop, backlog=1024),
    "FTPS_MTLS_PORT": FTPServer(("127.0.0.1", 0), handler(TLS_FTPHandler, tls=True, client_certificates=True), ioloop=ioloop, backlog=1024),
    "FTPS_TLS12_PORT": FTPServer(("127.0.0.1", 0), handler(TLS_FTPHandler, tls=True, only_version=SSL.TLS1_2_VERSION), ioloop=ioloop, backlog=1024),
    "FTPS_TLS13_PORT": FTPServer(("127.0.0.1", 0), handler(TLS_FTPHandler, tls=True, only_version=SSL.TLS1_3_VERSION), ioloop=ioloop, backlog=1024),
}
# No connection limit: pyftpdlib counts every socket of the servers (listeners and data connections too) against
# one server's max_cons, and one turned away is closed at once, its 421 possibly unsent (a client then reads a bare EOF).
for server in servers.values():
    server.max_cons = 0
    server.max_cons_per_ip = 0
with open(env_file, "w") as out:
    for name, server in servers.items():
        out.write("%s=%d\n" % (name, server.address[1]))
next(iter(servers.values())).serve_forever(timeout=0.5, blocking=True, handle_exit=True)
