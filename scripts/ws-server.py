#!/usr/bin/env python3
"""The WebSocket servers of the tests, on 127.0.0.1 only (the websockets package): plain (ws) and TLS (wss, the
test certificate for localhost). Usage:
    ws-server.py CERT KEY ENV_FILE SOCKET
(SOCKET: a Unix socket where the plain server listens too)
Paths: /echo answers each message with itself (text as text, bytes as bytes); /close sends "closing" and closes
with 4000 "done"; /big sends one 2 MiB binary message; /many sends the texts "0" to "199" and closes with 1000; /flood sends 64
binary messages of 256 KiB (each filled with its index) and closes with 1000;
/cookie sends the Cookie field of the handshake, then its X-Greeting field; /protocol takes "chat" when the client
offers it (else no subprotocol) and sends the one it took ("" for none); /protocol-unasked answers with the
subprotocol "unasked" whatever the client offered (a server breaking RFC 6455 §4.2.2); /hsts echoes as /echo does, its 101
answer carrying Strict-Transport-Security: max-age=600. Redirects (302, no
WebSocket): /moved to /echo; /moved-cookie sets the cookie moved=1 and goes to /cookie; /moved-secure to the TLS
server's wss://localhost:PORT/echo (another origin), /moved-secure-cookie to its /cookie; /moved-http to http://127.0.0.1:PORT/echo (http standing for
ws); /moved-loop to itself; /moved-file to file:///etc/hostname. Challenges (401 until answered, then the socket sends
"welcome" and echoes): /auth-basic takes Basic wsuser:wspass (realm "sockets") and sets the cookie tried=1 on its 401, /auth-cookie the same
only with that cookie; /auth-moved answers the right Basic credential with a 302 to /authorization, a WebSocket that
sends the Authorization field of its handshake ("" for none);
/auth-page is plain HTTP: 200 "page" for the same Basic credential, else its 401;
/auth-digest takes Digest MD5 with qop=auth for the same user (each 401 a new nonce, a response checked against the
request's own target); /auth-bearer offers only Bearer, which no client here answers. Plain HTTP:
/barrier/ID/N holds each GET until N requests for that ID are waiting there together, then answers 200 "together"; a request
still alone after 5 seconds gets 503 "alone" (so that transfers meant to run at once can show that they did).
/flaky/ID/N answers the first N GETs for ID with 503 "busy" and Retry-After: 2, then 200 "recovered";
/flaky-plain/ID/N the same without Retry-After; /slow/ID/N waits 3 seconds before answering each of the first N, then
answers at once ("on time"); /head-then-close sends a head promising 1000 bytes and closes with none. /drop sends "dropping" and ends the TCP connection (a FIN) a second later without a close frame, /drop-now at once; any other
path is refused with 404. Per-message compression (permessage-deflate, the package's default, taken when the client offers
it): /extensions sends the Sec-WebSocket-Extensions of its 101 answer ("" for none), then echoes; /fragmented sends one
compressible text message in three frames, then echoes; /bomb sends 8 MiB of zeros as one message (some 8 KiB
compressed); /bad-extension answers with "permessage-deflate; client_max_window_bits=10" (not allowed: the client did
not offer it), /unoffered-extension with "x-unknown" and /forced-deflate with "permessage-deflate" whatever the client
offered, and /no-connection leaves Connection out, each then sending "unreadable" (/no-connection-echo leaves it out and
echoes, saying nothing first); /wire answers each message with how its first frame came on the wire:
"compressed" (RSV1 set) or "plain".
Frames to script misbehaviour: /burst sends the texts "0" to "39" at once, then echoes; /burst-ping sends them and a ping
in one segment, then "pong-ok" if the pong came within 2 s (else "pong-missing"), then echoes; /slow-reader reads nothing for 7 s, then
echoes; /no-read reads nothing for a minute, then ends the connection; /trickle reads slowly but steadily (128 KiB
every 250 ms) for a minute, then ends the connection; /zeros writes 400 binary messages of 1 MiB of
zeros at once, each compressed apart (some 1 KiB; the client must have offered permessage-deflate), then waits for
the client to close (/zeros-close: ends the connection right after them); /raw/HEX writes the bytes HEX
names on the socket as they are (frames the package would never send), then waits for the client to end it;
/record-close/ID echoes until the client closes, then keeps the close frame it received, which the plain HTTP path
/closes/ID answers as "CODE REASON-IN-HEX" ("none" for a connection ended without one, "pending" while it is open).
WS_PORT and WSS_PORT go to ENV_FILE once both listen."""
import asyncio
import base64
import hashlib
import os
import secrets
import socket
import ssl
import struct
import sys
import zlib

from websockets.asyncio.server import serve, unix_serve
from websockets.http11 import Response
from websockets.datastructures import Headers
from websockets.frames import Opcode

cert, key, env_file, unix_socket = sys.argv[1:5]
PATHS = {"/burst", "/burst-ping", "/slow-reader", "/no-read", "/trickle", "/zeros-close", "/no-connection", "/no-connection-echo", "/zeros", "/extensions", "/fragmented", "/bomb", "/bad-extension", "/unoffered-extension", "/forced-deflate", "/wire", "/authorization", "/echo", "/close", "/big", "/many", "/flood", "/cookie", "/drop", "/drop-now", "/protocol", "/protocol-unasked", "/hsts"}


# The ports both servers listen on, once they do (for the redirects that name them).
PORTS = {}
REDIRECTS = {
    "/moved": lambda: "/echo",
    "/moved-cookie": lambda: "/cookie",
    "/moved-secure": lambda: "wss://localhost:%d/echo" % PORTS["wss"],
    "/moved-secure-cookie": lambda: "wss://localhost:%d/cookie" % PORTS["wss"],
    "/moved-http": lambda: "http://127.0.0.1:%d/echo" % PORTS["ws"],
    "/moved-loop": lambda: "/moved-loop",
    "/moved-file": lambda: "file:///etc/hostname",
}


AUTH_USER, AUTH_PASSWORD, AUTH_REALM = "wsuser", "wspass", "sockets"
# The Authorization value the Basic paths take.
BASIC_ANSWER = "Basic " + base64.b64encode(("%s:%s" % (AUTH_USER, AUTH_PASSWORD)).encode()).decode()
AUTH_PATHS = {"/auth-basic", "/auth-cookie", "/auth-moved", "/auth-digest", "/auth-bearer"}


def md5(text):
    return hashlib.md5(text.encode()).hexdigest()


def digest_ok(request, value):
    """Whether the Digest answer `value` holds the right response for the user, its own nonce and the request's target."""
    fields = {}
    for part in value[len("Digest "):].split(","):
        name, _, raw = part.strip().partition("=")
        fields[name.lower()] = raw.strip('"')
    if fields.get("username") != AUTH_USER or fields.get("uri") != request.path or fields.get("realm") != AUTH_REALM:
        return False
    ha1 = md5("%s:%s:%s" % (AUTH_USER, AUTH_REALM, AUTH_PASSWORD))
    ha2 = md5("GET:%s" % request.path)
    expected = md5(":".join([ha1, fields.get("nonce", ""), fields.get("nc", ""), fields.get("cnonce", ""), "auth", ha2]))
    return fields.get("qop") == "auth" and fields.get("response") == expected


def challenge(request):
    """The 401 for an auth path whose request carries no credential it takes; None when it does."""
    given = request.headers.get("Authorization", "")
    if request.path == "/auth-moved":
        if given == BASIC_ANSWER:
            return Response(302, "Found", Headers([("Location", "/authorization"), ("Content-Length", "0")]), b"")
        offer = 'Basic realm="%s"' % AUTH_REALM
    elif request.path in ("/auth-basic", "/auth-cookie", "/auth-page"):
        cookie_ok = request.path != "/auth-cookie" or "tried=1" in request.headers.get("Cookie", "")
        if given == BASIC_ANSWER and cookie_ok:
            return None
        offer = 'Basic realm="%s"' % AUTH_REALM
    elif request.path == "/auth-digest":
        if given.startswith("Digest ") and digest_ok(request, given):
            return None
        offer = 'Digest realm="%s", qop="auth", algorithm=MD5, nonce="%s"' % (AUTH_REALM, secrets.token_hex(16))
    else:
        offer = 'Bearer realm="%s"' % AUTH_REALM
    headers = [("WWW-Authenticate", offer), ("Content-Length", "14")]
    if request.path in ("/auth-basic", "/auth-cookie"):
        headers.append(("Set-Cookie", "tried=1; Path=/"))
    return Response(401, "Unauthorized", Headers(headers), b"who are you?\r\n")


# Per barrier ID: how many requests arrived, and the event that lets them all go.
BARRIERS = {}


async def barrier(path):
    """The answer to /barrier/ID/N (see the module's note)."""
    _, _, ident, count = path.split("/", 3)
    group = BARRIERS.setdefault(ident, {"waiting": 0, "released": asyncio.Event()})
    released = group["released"]
    group["waiting"] += 1
    if group["waiting"] >= int(count):
        released.set()
        # Those that come after wait for a group of their own.
        BARRIERS[ident] = {"waiting": 0, "released": asyncio.Event()}
    try:
        await asyncio.wait_for(released.wait(), 5)
        return Response(200, "OK", Headers([("Content-Length", "8")]), b"together")
    except TimeoutError:
        # No longer waiting: a later request does not meet this one.
        group["waiting"] -= 1
        return Response(503, "Service Unavailable", Headers([("Content-Length", "5")]), b"alone")


# Per ID: how many GETs of /flaky, /flaky-plain or /slow came.
SEEN = {}


async def flaky(path):
    """The answer to /flaky/ID/N, /flaky-plain/ID/N or /slow/ID/N (see the module's note)."""
    _, kind, ident, count = path.split("/", 3)
    SEEN[ident] = SEEN.get(ident, 0) + 1
    early = SEEN[ident] <= int(count)
    if kind == "slow":
        if early:
            await asyncio.sleep(3)
        return Response(200, "OK", Headers([("Content-Length", "7")]), b"on time")
    if not early:
        return Response(200, "OK", Headers([("Content-Length", "9")]), b"recovered")
    headers = [("Content-Length", "4")] + ([("Retry-After", "2")] if kind == "flaky" else [])
    return Response(503, "Service Unavailable", Headers(headers), b"busy")


# Per /record-close ID: the close frame its client sent.
CLOSES = {}


async def refuse_unknown(connection, request):
    response = await plain_answer(request)
    if response is not None:
        # websockets closes the connection after any answer but a 101: said in the answer, as a server that closes
        # does, so that no client keeps the connection for a next request it would find closed.
        response.headers["Connection"] = "close"
    return response


async def plain_answer(request):
    if request.path == "/auth-page":
        return challenge(request) or Response(200, "OK", Headers([("Content-Length", "4")]), b"page")
    if request.path.split("/")[1] in ("flaky", "flaky-plain", "slow") and request.path.count("/") == 3:
        return await flaky(request.path)
    if request.path == "/head-then-close":
        # A head that promises 1000 bytes, then the connection closes with none sent.
        return Response(200, "OK", Headers([("Content-Length", "1000")]), b"")
    if request.path.startswith("/barrier/") and request.path.count("/") == 3:
        return await barrier(request.path)
    if request.path.startswith("/closes/"):
        text = CLOSES.get(request.path[len("/closes/"):], "pending").encode()
        return Response(200, "OK", Headers([("Content-Length", str(len(text)))]), text)
    if request.path.startswith("/raw/") or request.path.startswith("/record-close/"):
        return None
    if request.path in AUTH_PATHS:
        return challenge(request)
    if request.path in REDIRECTS:
        headers = [("Location", REDIRECTS[request.path]()), ("Content-Length", "0")]
        if request.path == "/moved-cookie":
            headers.append(("Set-Cookie", "moved=1; Path=/; Expires=Wed, 01 Jan 2031 00:00:00 GMT"))
        return Response(302, "Found", Headers(headers), b"")
    if request.path not in PATHS:
        return Response(404, "Not Found", Headers([("Content-Length", "10")]), b"not here\r\n")
    return None


# The Sec-WebSocket-Extensions a path's 101 answer carries in place of the one the package agreed to.
FORGED_EXTENSIONS = {"/bad-extension": "permessage-deflate; client_max_window_bits=10", "/unoffered-extension": "x-unknown",
                     "/forced-deflate": "permessage-deflate"}


def forge_answer(connection, request, response):
    if request.path in ("/no-connection", "/no-connection-echo") and response.status_code == 101:
        del response.headers["Connection"]
    if request.path == "/hsts" and response.status_code == 101:
        response.headers["Strict-Transport-Security"] = "max-age=600"
    if request.path in FORGED_EXTENSIONS and response.status_code == 101:
        if "Sec-WebSocket-Extensions" in response.headers:
            del response.headers["Sec-WebSocket-Extensions"]
        response.headers["Sec-WebSocket-Extensions"] = FORGED_EXTENSIONS[request.path]
    return response


def select_subprotocol(connection, subprotocols):
    if connection.request.path == "/protocol-unasked":
        return "unasked"
    if connection.request.path == "/protocol" and "chat" in subprotocols:
        return "chat"
    return None


async def handle(ws):
    path = ws.request.path
    if path in ("/echo", "/no-connection-echo", "/hsts"):
        async for message in ws:
            await ws.send(message)
    elif path == "/burst":
        for index in range(40):
            await ws.send(str(index))
        async for message in ws:
            await ws.send(message)
    elif path == "/slow-reader":
        # Reads nothing for 7 s (a client's large message and what follows it wait in the sockets' buffers), then echoes.
        ws.transport.pause_reading()
        await asyncio.sleep(7)
        ws.transport.resume_reading()
        async for message in ws:
            await ws.send(message)
    elif path == "/trickle":
        # Slow but steady: 128 KiB taken off the socket every 250 ms, past the websockets library (what is read is
        # dropped unparsed), for a minute at most.
        ws.transport.pause_reading()
        descriptor = ws.transport.get_extra_info("socket").fileno()
        loop = asyncio.get_running_loop()
        end = loop.time() + 60
        while loop.time() < end:
            await asyncio.sleep(0.25)
            try:
                if not os.read(descriptor, 131072):
                    break
            except BlockingIOError:
                continue
        ws.transport.abort()
    elif path == "/no-read":
        # Reads nothing (what a client sends fills the sockets' buffers, then waits), for a minute at most.
        ws.transport.pause_reading()
        await asyncio.sleep(60)
        ws.transport.abort()
    elif path == "/burst-ping":
        # The forty texts and a ping in one segment (corked), read by the client together: it holds the texts its
        # reader has not taken, and must answer the ping all the same. Then "pong-ok" if its pong came within 2 s,
        # else "pong-missing"; then echoes.
        sock = ws.transport.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
        ws.transport.write(b"".join(b"\x81" + bytes([len(str(i))]) + str(i).encode() for i in range(40)))
        waiter = await ws.ping()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
        try:
            await asyncio.wait_for(waiter, 2)
            await ws.send("pong-ok")
        except asyncio.TimeoutError:
            await ws.send("pong-missing")
        async for message in ws:
            await ws.send(message)
    elif path in ("/zeros", "/zeros-close"):
        # Written in one go, so that they arrive together: the package's own send compresses each as it goes.
        deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
        payload = (deflate.compress(bytes(1 << 20)) + deflate.flush(zlib.Z_SYNC_FLUSH))[:-4]
        frame = b"\xc2\x7e" + struct.pack("!H", len(payload)) + payload
        ws.transport.write(frame * 400)
        if path == "/zeros-close":
            # Then the end of the connection, with no close frame: every frame is the client's to read before it.
            ws.transport.close()
        await ws.wait_closed()
    elif path.startswith("/raw/"):
        ws.transport.write(bytes.fromhex(path[len("/raw/"):]))
        await ws.wait_closed()
    elif path.startswith("/record-close/"):
        try:
            async for message in ws:
                await ws.send(message)
        finally:
            # The close frame received, as the package read it (code 1005 for one without a code); None for none, or
            # for one it refused (a code no frame may carry, a reason that is not UTF-8).
            received = ws.protocol.close_rcvd
            CLOSES[path[len("/record-close/"):]] = "none" if received is None else "%d %s" % (received.code, received.reason.encode().hex())
    elif path in ("/extensions", "/fragmented"):
        if path == "/extensions":
            await ws.send(ws.response.headers.get("Sec-WebSocket-Extensions", ""))
        else:
            await ws.send(["compressible " * 1000, "text " * 1000, "end"])
        async for message in ws:
            await ws.send(message)
    elif path == "/wire":
        # Each data frame's RSV1 as it came, seen before the extension takes the bit off (control frames and a
        # message's later frames are left out: RSV1 belongs to a message's first frame).
        firsts = []
        for extension in ws.protocol.extensions:
            decode = extension.decode

            def watched(frame, *, max_size=None, decode=decode):
                if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
                    firsts.append(frame.rsv1)
                return decode(frame, max_size=max_size)
            extension.decode = watched
        async for _ in ws:
            await ws.send("compressed" if firsts and firsts.pop(0) else "plain")
    elif path == "/bomb":
        await ws.send(bytes(8 * 1024 * 1024))
        await ws.wait_closed()
    elif path in FORGED_EXTENSIONS or path == "/no-connection":
        await ws.send("unreadable")
        await ws.wait_closed()
    elif path == "/close":
        await ws.send("closing")
        await ws.close(4000, "done")
    elif path == "/big":
        await ws.send(bytes(2 * 1024 * 1024))
        await ws.wait_closed()
    elif path == "/many":
        for index in range(200):
            await ws.send(str(index))
        await ws.close(1000, "")
    elif path == "/flood":
        for index in range(64):
            await ws.send(bytes([index]) * (256 * 1024))
        await ws.close(1000, "")
    elif path == "/cookie":
        await ws.send(ws.request.headers.get("Cookie", ""))
        await ws.send(ws.request.headers.get("X-Greeting", ""))
        await ws.wait_closed()
    elif path == "/authorization":
        await ws.send(ws.request.headers.get("Authorization", ""))
        await ws.wait_closed()
    elif path in AUTH_PATHS:
        await ws.send("welcome")
        async for message in ws:
            await ws.send(message)
    elif path in ("/protocol", "/protocol-unasked"):
        await ws.send(ws.subprotocol or "")
        await ws.wait_closed()
    elif path == "/drop":
        await ws.send("dropping")
        # Then the socket closes (a FIN after what is buffered) with no close frame, a second later: most often in a
        # read of its own (/drop-now: in the one with the 101). Not abort(): its reset makes the client's kernel drop
        # what the client has not read yet, the 101 itself for a client slowed down (the thread sanitizer on a busy
        # machine), which then sees a handshake cut short.
        await asyncio.sleep(1)
        ws.transport.close()
    elif path == "/drop-now":
        # The same at once: the close often comes in the same read as the 101.
        await ws.send("dropping")
        ws.transport.close()


async def main():
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    options = dict(process_request=refuse_unknown, process_response=forge_answer, select_subprotocol=select_subprotocol, ping_interval=None, max_size=4 * 1024 * 1024)
    async with serve(handle, "127.0.0.1", 0, **options) as plain, serve(handle, "127.0.0.1", 0, ssl=tls, **options) as secure, \
            unix_serve(handle, unix_socket, **options):
        ports = [server.sockets[0].getsockname()[1] for server in (plain, secure)]
        PORTS["ws"], PORTS["wss"] = ports
        with open(env_file, "w") as out:
            out.write("WS_PORT=%d\nWSS_PORT=%d\nWS_UNIX_SOCKET=%s\n" % (ports[0], ports[1], unix_socket))
        await asyncio.get_running_loop().create_future()


asyncio.run(main())
