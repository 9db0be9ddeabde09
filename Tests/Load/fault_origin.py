#!/usr/bin/env python3
"""A misbehaving image origin for Tests/Load/serve_faults.py (standard library only).

    fault_origin.py HOST IMAGE_FILE REDIRECT_HOST

Listens on HOST (a loopback address) on a free port and prints "port N" once it listens. Routes, where
NAME is anything (so every URL is a different source):
  /image/NAME      the image file, 200
  /slow/NAME       the image file after 3 seconds
  /error/NAME      500 with a text body
  /endless/NAME    200 image/jpeg with no length, bytes until the client goes away
  /html/NAME       200 text/html: a page, not an image
  /redirect/NAME   302 to http://REDIRECT_HOST:PORT/image/NAME (an address the service must refuse)
"""
import http.server
import socketserver
import sys
import time

HOST, IMAGE_FILE, REDIRECT_HOST = sys.argv[1], sys.argv[2], sys.argv[3]
IMAGE = open(IMAGE_FILE, "rb").read()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *arguments):
        pass

    def send(self, status, content_type, body, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        route = self.path.split("/")[1] if self.path.count("/") >= 2 else ""
        name = self.path.split("/", 2)[2] if route else ""
        try:
            if route == "image":
                self.send(200, "image/jpeg", IMAGE)
            elif route == "slow":
                time.sleep(3)
                self.send(200, "image/jpeg", IMAGE)
            elif route == "error":
                self.send(500, "text/plain", b"internal error\n")
            elif route == "endless":
                self.send_response(200)
                self.send_header("Content-Type", "image/jpeg")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                chunk = IMAGE[:65536]
                while True:
                    self.wfile.write(chunk)
            elif route == "html":
                self.send(200, "text/html; charset=utf-8", b"<!doctype html><title>not an image</title>\n" * 50)
            elif route == "redirect":
                port = self.server.server_address[1]
                self.send(302, "text/plain", b"moved\n", [("Location", f"http://{REDIRECT_HOST}:{port}/image/{name}")])
            else:
                self.send(404, "text/plain", b"no such route\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 256


server = Server((HOST, 0), Handler)
print("port", server.server_address[1], flush=True)
server.serve_forever()
