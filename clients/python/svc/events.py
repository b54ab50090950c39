"""Event subscriptions over the node's ``/ws`` WebSocket, standard library only.

The node's event socket (service-spec §6) speaks JSON text frames::

    client → {"type": "subscribe", "id": "1", "channel": "executions", "rufid": "<optional>"}
    server → {"type": "subscribed", "id": "1", "channel": "executions"}
             {"type": "event", "id": "1", "channel": "executions", "payload": {...}}
             {"type": "error", "id": "1", "code": 1006, "name": "...", "message": "..."}

This module holds a small RFC 6455 client (handshake, masked client frames, fragmented messages,
ping/pong, close) — enough for that protocol and nothing more — so that ``svc`` keeps no
third-party dependency. The TypeScript and Go clients speak the same protocol to the same path,
and every client gets the same payloads (snake_case, as REST).

One socket per subscription, read by a daemon thread that answers the node's pings (a client that
does not is dropped after one heartbeat) and queues events for :meth:`Subscription.next_event` or
iteration.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import queue
import socket
import ssl
import struct
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, Iterator, Mapping, Optional

from . import errors as _errors
from ._fields import with_rufid_forms
from .errors import SvcError, error_from_response

__all__ = ["Subscription", "SubscriptionClosedError", "open_subscription"]

_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_SUBSCRIPTION_ID = "1"
_MAX_HEADER_BYTES = 64 * 1024
_MAX_MESSAGE_BYTES = 16 * 1024 * 1024

_OP_CONT, _OP_TEXT, _OP_BINARY, _OP_CLOSE, _OP_PING, _OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class SubscriptionClosedError(SvcError):
    """The node ended the subscription (``details["close_code"]``, e.g. 1013 when the client read
    too slowly, 1001 when the node stops) or the connection dropped: subscribe again."""

    code = None
    name = "SUBSCRIPTION_CLOSED"


class _Closed(Exception):
    def __init__(self, code: Optional[int], reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


_END = object()


class Subscription:
    """A live subscription to one channel of a node's event socket.

    Iterate it (``for event in sub``; the loop ends after :meth:`close`) or call
    :meth:`next_event`. Events are plain dicts (an execution event: ``execution_id``, ``rufid``,
    ``rufid_short``, ``full_rufid``, ``version``, ``tenant_id``, ``function_name``, ``status``,
    ``execution_time_ms``, ``error_code``, ``timestamp``). If the node closes the socket, the
    iteration raises :class:`SubscriptionClosedError`. Use it as a context manager to close it.
    """

    def __init__(self, sock: socket.socket, channel: str, rufid: Optional[str],
                 on_event: Optional[Callable[[Dict[str, Any]], None]] = None, max_queued: int = 10000) -> None:
        self.channel = channel
        self.rufid = rufid
        self._sock = sock
        self._write_lock = threading.Lock()
        self._events: "queue.Queue[Any]" = queue.Queue()
        self._on_event = on_event
        self._max_queued = max_queued
        self._failure: Optional[SvcError] = None
        self._closing = False
        self._confirmed = threading.Event()
        self._confirm_error: Optional[SvcError] = None
        self._reader = threading.Thread(target=self._read_loop, name="svc-subscription", daemon=True)

    # ---- public ---------------------------------------------------------------------------

    def next_event(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """The next event. Raises :class:`svc.WaitTimeoutError` after ``timeout`` seconds without
        one, :class:`SubscriptionClosedError` when the subscription has ended."""
        try:
            item = self._events.get(timeout=timeout)
        except queue.Empty:
            from .client import WaitTimeoutError

            raise WaitTimeoutError("no %s event within %ss" % (self.channel, timeout),
                                   details={"channel": self.channel}) from None
        if item is _END:
            self._events.put(_END)  # every later call ends the same way
            raise self._failure or SubscriptionClosedError("the subscription is closed")
        return item

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        while True:
            try:
                yield self.next_event()
            except SubscriptionClosedError:
                if self._failure is None:
                    return  # closed by close(): the iteration simply ends
                raise

    def close(self, timeout: float = 2.0) -> None:
        """Ends the subscription and closes its socket (waits up to ``timeout`` s for the node)."""
        if self._closing:
            return
        self._closing = True
        try:
            self._send(_OP_CLOSE, struct.pack("!H", 1000))
        except OSError:
            pass
        self._reader.join(timeout)
        try:
            self._sock.close()
        except OSError:
            pass
        self._events.put(_END)

    @property
    def closed(self) -> bool:
        return self._closing or not self._reader.is_alive()

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<svc.Subscription %s%s%s>" % (self.channel, " " + self.rufid if self.rufid else "",
                                               " closed" if self.closed else "")

    # ---- protocol -------------------------------------------------------------------------

    def _start(self, timeout: Optional[float]) -> None:
        self._reader.start()
        message: Dict[str, Any] = {"type": "subscribe", "id": _SUBSCRIPTION_ID, "channel": self.channel}
        if self.rufid is not None:
            message["rufid"] = self.rufid
        self._send(_OP_TEXT, json.dumps(message).encode("utf-8"))
        if not self._confirmed.wait(timeout):
            self.close()
            raise _errors.SvcConnectionError("the node did not confirm the %s subscription within %ss"
                                             % (self.channel, timeout), name="REQUEST_TIMEOUT")
        if self._confirm_error is not None:
            self.close()
            raise self._confirm_error

    def _send(self, opcode: int, payload: bytes) -> None:
        header = bytearray([0x80 | opcode])
        n = len(payload)
        if n < 126:
            header.append(0x80 | n)
        elif n < 1 << 16:
            header.append(0x80 | 126)
            header += struct.pack("!H", n)
        else:
            header.append(0x80 | 127)
            header += struct.pack("!Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        with self._write_lock:
            self._sock.sendall(bytes(header) + mask + masked)

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n > 0:
            chunk = self._sock.recv(min(n, 65536))
            if not chunk:
                raise _Closed(None, "the connection was closed")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _read_frame(self) -> "tuple[bool, int, bytes]":
        b0, b1 = self._read_exact(2)
        fin, opcode, length = bool(b0 & 0x80), b0 & 0x0F, b1 & 0x7F
        if length == 126:
            length = struct.unpack("!H", self._read_exact(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", self._read_exact(8))[0]
        if length > _MAX_MESSAGE_BYTES:
            raise _Closed(1009, "a frame of %d bytes is too large" % length)
        mask = self._read_exact(4) if b1 & 0x80 else None
        payload = self._read_exact(length) if length else b""
        if mask:
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        return fin, opcode, payload

    def _read_message(self) -> Optional[bytes]:
        """The next text message (control frames handled on the way); None for a binary one."""
        parts = []
        kind = None
        while True:
            fin, opcode, payload = self._read_frame()
            if opcode == _OP_PING:
                self._send(_OP_PONG, payload)
                continue
            if opcode == _OP_PONG:
                continue
            if opcode == _OP_CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                if not self._closing:
                    try:
                        self._send(_OP_CLOSE, payload[:2])
                    except OSError:
                        pass
                raise _Closed(code, payload[2:].decode("utf-8", "replace"))
            if opcode in (_OP_TEXT, _OP_BINARY):
                kind = opcode
                parts = [payload]
            elif opcode == _OP_CONT:
                parts.append(payload)
            if fin:
                return b"".join(parts) if kind == _OP_TEXT else None

    def _read_loop(self) -> None:
        try:
            while True:
                raw = self._read_message()
                if raw is None:
                    continue
                try:
                    message = json.loads(raw.decode("utf-8"))
                except ValueError:
                    continue
                if isinstance(message, dict):
                    self._handle(message)
        except _Closed as closed:
            if not self._closing:
                self._fail(SubscriptionClosedError(
                    "the node closed the subscription (%s%s)" % (closed.code, ": " + closed.reason if closed.reason else ""),
                    details={"close_code": closed.code, "reason": closed.reason}))
        except (OSError, ValueError, struct.error) as e:
            if not self._closing:
                self._fail(SubscriptionClosedError("the subscription's connection failed: %s" % e,
                                                   details={"reason": str(e)}))
        finally:
            self._confirmed.set()
            self._events.put(_END)

    def _handle(self, message: Dict[str, Any]) -> None:
        if message.get("id") not in (None, _SUBSCRIPTION_ID):
            return
        kind = message.get("type")
        if kind == "subscribed":
            self._confirmed.set()
        elif kind == "event":
            self._confirmed.set()
            event = with_rufid_forms(message.get("payload"))
            if self._on_event is not None:
                try:
                    self._on_event(event)
                except Exception:  # noqa: BLE001 - a failing listener must not end the subscription
                    pass
            elif self._events.qsize() >= self._max_queued:
                self._fail(SubscriptionClosedError("more than %d events queued unread; subscription closed"
                                                   % self._max_queued, name="SUBSCRIPTION_OVERFLOW"))
                self._closing = True
                raise _Closed(1000, "overflow")
            else:
                self._events.put(event)
        elif kind == "error":
            code = message.get("code")
            err = _errors.error_class_for(code)(
                str(message.get("message") or "subscription refused"),
                code=code if isinstance(code, int) else None,
                name=message.get("name") if isinstance(message.get("name"), str) else None,
                details=message.get("details") if isinstance(message.get("details"), dict) else None,
            )
            if not self._confirmed.is_set():
                self._confirm_error = err
                self._confirmed.set()
            else:
                self._fail(err)

    def _fail(self, error: SvcError) -> None:
        if self._failure is None:
            self._failure = error


def open_subscription(base_url: str, headers: Mapping[str, str], channel: str, rufid: Optional[str] = None,
                      *, timeout: Optional[float] = 30, on_event: Optional[Callable[[Dict[str, Any]], None]] = None,
                      ssl_context: Optional[ssl.SSLContext] = None) -> Subscription:
    """Opens ``<base_url>/ws``, subscribes to ``channel`` and returns once the node confirmed it
    (every event after that is delivered). A refused upgrade raises the REST typed error (401/403
    → PermissionDeniedError, 429 → RateLimitedError…); no answer raises SvcConnectionError."""
    parts = urllib.parse.urlsplit(base_url)
    secure = parts.scheme == "https"
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if secure else 80)
    path = (parts.path.rstrip("/") or "") + "/ws"
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
        if secure:
            sock = (ssl_context or ssl.create_default_context()).wrap_socket(sock, server_hostname=host)
    except OSError as e:
        raise _errors.SvcConnectionError("cannot reach %s: %s" % (base_url, e),
                                         details={"url": base_url + "/ws", "reason": str(e)}) from e
    try:
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        lines = ["GET %s HTTP/1.1" % path, "Host: %s" % parts.netloc, "Upgrade: websocket", "Connection: Upgrade",
                 "Sec-WebSocket-Key: %s" % key, "Sec-WebSocket-Version: 13"]
        for name, value in headers.items():
            if name.lower() not in ("accept", "content-type", "host", "connection", "upgrade"):
                lines.append("%s: %s" % (name, value))
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        status, response_headers, rest = _read_handshake(sock)
        if status != 101:
            body = rest
            length = int(response_headers.get("content-length", "0") or 0)
            deadline = time.monotonic() + (timeout or 30)
            while len(body) < length and time.monotonic() < deadline:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                body += chunk
            sock.close()
            raise error_from_response(status, body, response_headers)
        expected = base64.b64encode(hashlib.sha1((key + _GUID).encode("ascii")).digest()).decode("ascii")
        if response_headers.get("sec-websocket-accept") != expected:
            sock.close()
            raise SvcError("the node's WebSocket handshake is invalid (Sec-WebSocket-Accept)", name="BAD_RESPONSE",
                           http_status=status)
        if rest:
            raise SvcError("unexpected data after the WebSocket handshake", name="BAD_RESPONSE")
        sock.settimeout(None)
    except OSError as e:
        sock.close()
        raise _errors.SvcConnectionError("WebSocket handshake with %s failed: %s" % (base_url, e),
                                         details={"url": base_url + "/ws", "reason": str(e)}) from e
    sub = Subscription(sock, channel, rufid, on_event=on_event)
    sub._start(timeout)
    return sub


def _read_handshake(sock: socket.socket) -> "tuple[int, Dict[str, str], bytes]":
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise OSError("the connection closed during the handshake")
        data += chunk
        if len(data) > _MAX_HEADER_BYTES:
            raise OSError("the handshake answer is too large")
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split(" ", 2)[1])
    except (IndexError, ValueError):
        raise OSError("not an HTTP answer: %r" % lines[0][:100]) from None
    headers: Dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, rest
