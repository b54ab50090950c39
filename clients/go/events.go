package svc

// Event subscriptions over the node's /ws WebSocket, standard library only.
//
// The node's event socket (service-spec §6) speaks JSON text frames:
//
//	client → {"type":"subscribe","id":"1","channel":"executions","rufid":"<optional>"}
//	server → {"type":"subscribed","id":"1","channel":"executions"}
//	         {"type":"event","id":"1","channel":"executions","payload":{…}}
//	         {"type":"error","id":"1","code":1006,"name":"…","message":"…"}
//
// This file holds a small RFC 6455 client (handshake, masked client frames, fragmented messages,
// ping/pong, close) — enough for that protocol — so that the package keeps no dependency. The
// TypeScript and Python clients speak the same protocol to the same path and get the same
// payloads. One socket per subscription, read by a goroutine that answers the node's pings (a
// client that does not is dropped after one heartbeat) and queues events for Next.

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ErrSubscriptionClosed is returned by Subscription.Next once the subscription has ended: after
// Close, or when the node closed it (then wrapped in a *SubscriptionClosedError naming the close
// code, e.g. 1013 when the client read too slowly, 1001 when the node stops): subscribe again.
var ErrSubscriptionClosed = errors.New("svc: the subscription is closed")

// SubscriptionClosedError tells why the node ended a subscription.
type SubscriptionClosedError struct {
	CloseCode int    // the WebSocket close code, 0 when the connection just dropped
	Reason    string // the node's close reason or the transport error
}

func (e *SubscriptionClosedError) Error() string {
	return fmt.Sprintf("svc: the node closed the subscription (%d %s)", e.CloseCode, e.Reason)
}

// Unwrap makes errors.Is(err, ErrSubscriptionClosed) true.
func (e *SubscriptionClosedError) Unwrap() error { return ErrSubscriptionClosed }

// ExecutionEvent is one finished execution, as the /ws "executions" channel sends it.
type ExecutionEvent struct {
	ExecutionID     string  `json:"execution_id"`
	RUFID           string  `json:"rufid"` // full form
	RUFIDShort      string  `json:"rufid_short"`
	FullRUFID       string  `json:"full_rufid"`
	Version         string  `json:"version"`
	TenantID        string  `json:"tenant_id"`
	FunctionName    string  `json:"function_name"`
	Status          string  `json:"status"`
	ExecutionTimeMS float64 `json:"execution_time_ms"`
	ErrorCode       *int    `json:"error_code"`
	Timestamp       string  `json:"timestamp"`
}

func (e *ExecutionEvent) normalize() {
	fillRUFIDForms(e.RUFID, &e.RUFIDShort, &e.FullRUFID, e.Version, e.TenantID)
}

// SystemEvent is a node or tenant event on the /ws "system" channel (function.created,
// function.deleted, node.started, node.stopping, peer.joined, peer.left).
type SystemEvent struct {
	Type      string         `json:"type"`
	TenantID  *string        `json:"tenant_id"` // nil for node-wide events
	RUFID     *string        `json:"rufid"`
	Message   string         `json:"message"`
	Timestamp string         `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

// Subscription is a live subscription to one channel of a node's event socket. Read it with Next;
// Close ends it. It is safe for one reader and any number of Close calls.
type Subscription[E any] struct {
	Channel string
	RUFID   string

	conn      net.Conn
	br        *bufio.Reader
	writeMu   sync.Mutex
	events    chan E
	done      chan struct{}
	closeOnce sync.Once
	failMu    sync.Mutex
	failure   error
	closing   bool
	conf      *confirmState
}

const (
	wsGUID            = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
	wsSubscriptionID  = "1"
	wsMaxMessageBytes = 16 << 20
	wsQueuedEvents    = 10000

	opCont, opText, opBinary, opClose, opPing, opPong = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
)

// SubscribeExecutions subscribes to finished executions of the caller's tenant (of rufid only when
// it is not "") over the node's /ws socket. It returns once the node confirmed the subscription,
// so every execution that finishes afterwards is delivered. A refused connection is the REST
// error (*Error 1003 for 401/403, 1005 for 429…).
func (c *Client) SubscribeExecutions(ctx context.Context, rufid string) (*Subscription[ExecutionEvent], error) {
	if rufid != "" {
		if _, err := ParseRUFID(rufid); err != nil {
			return nil, err
		}
	}
	return subscribe[ExecutionEvent](ctx, c, "executions", rufid)
}

// SubscribeSystem subscribes to system events; the first event is the node's lifecycle event
// (node.started, or node.stopping while it drains).
func (c *Client) SubscribeSystem(ctx context.Context) (*Subscription[SystemEvent], error) {
	return subscribe[SystemEvent](ctx, c, "system", "")
}

// Next returns the next event; it stops with ctx's error, or with ErrSubscriptionClosed (possibly
// a *SubscriptionClosedError) once the subscription has ended and every queued event was read.
func (s *Subscription[E]) Next(ctx context.Context) (E, error) {
	var zero E
	select {
	case ev := <-s.events:
		return ev, nil
	default:
	}
	select {
	case ev := <-s.events:
		return ev, nil
	case <-s.done:
		select {
		case ev := <-s.events:
			return ev, nil
		default:
		}
		return zero, s.err()
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Close ends the subscription and closes its socket (waiting up to 2 s for the node's answer).
func (s *Subscription[E]) Close() error {
	s.closeOnce.Do(func() {
		s.failMu.Lock()
		s.closing = true
		s.failMu.Unlock()
		_ = s.send(opClose, []byte{0x03, 0xE8}) // 1000
		select {
		case <-s.done:
		case <-time.After(2 * time.Second):
		}
		_ = s.conn.Close()
		<-s.done
	})
	return nil
}

func (s *Subscription[E]) err() error {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	if s.failure != nil {
		return s.failure
	}
	return ErrSubscriptionClosed
}

func (s *Subscription[E]) fail(err error) {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	if s.failure == nil && !s.closing {
		s.failure = err
	}
}

func subscribe[E any](ctx context.Context, c *Client, channel, rufid string) (*Subscription[E], error) {
	u, err := url.Parse(c.baseURL + "/ws")
	if err != nil {
		return nil, fmt.Errorf("svc: %w", err)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			host = net.JoinHostPort(u.Hostname(), "443")
		} else {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, connectionFailed("GET", "/ws", err)
	}
	if u.Scheme == "https" {
		cfg := &tls.Config{ServerName: u.Hostname()}
		if t, ok := c.httpClient.Transport.(*http.Transport); ok && t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
			if cfg.ServerName == "" {
				cfg.ServerName = u.Hostname()
			}
		}
		tlsConn := tls.Client(conn, cfg)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, connectionFailed("GET", "/ws", err)
		}
		conn = tlsConn
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	sub, err := handshake[E](conn, c, u, channel, rufid)
	if !stop() || err != nil {
		conn.Close()
		if err == nil || ctx.Err() != nil {
			return nil, connectionFailed("GET", "/ws", context.Cause(ctx))
		}
		return nil, err
	}
	_ = conn.SetDeadline(time.Time{})
	go sub.readLoop()
	return sub.confirm(ctx, rufid)
}

func handshake[E any](conn net.Conn, c *Client, u *url.URL, channel, rufid string) (*Subscription[E], error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	key := base64.StdEncoding.EncodeToString(raw)
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Sec-WebSocket-Key", key)
	req.Header.Set("Sec-WebSocket-Version", "13")
	c.setIdentity(req.Header)
	if err := req.Write(conn); err != nil {
		return nil, connectionFailed("GET", "/ws", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, connectionFailed("GET", "/ws", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		return nil, decodeErrorResponse(resp, body)
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	if resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		return nil, fmt.Errorf("svc: the node's WebSocket handshake is invalid (Sec-WebSocket-Accept)")
	}
	return &Subscription[E]{
		Channel: channel, RUFID: rufid, conn: conn, br: br,
		events: make(chan E, wsQueuedEvents), done: make(chan struct{}),
		conf: &confirmState{ch: make(chan struct{})},
	}, nil
}

// confirm sends the subscribe message and waits for the node's "subscribed" (or its error).
func (s *Subscription[E]) confirm(ctx context.Context, rufid string) (*Subscription[E], error) {
	msg := map[string]any{"type": "subscribe", "id": wsSubscriptionID, "channel": s.Channel}
	if rufid != "" {
		msg["rufid"] = rufid
	}
	b, _ := json.Marshal(msg)
	if err := s.send(opText, b); err != nil {
		s.Close()
		return nil, connectionFailed("GET", "/ws", err)
	}
	select {
	case <-s.confirmed():
		if err := s.confirmError(); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	case <-ctx.Done():
		s.Close()
		return nil, connectionFailed("GET", "/ws", ctx.Err())
	}
}

// confirmState is settled once: by "subscribed" (or a first event), or by an error before it,
// or when the connection ends before either.
type confirmState struct {
	ch   chan struct{}
	once sync.Once
	err  error
}

func (s *Subscription[E]) state() *confirmState { return s.conf }

func (s *Subscription[E]) confirmed() <-chan struct{} { return s.state().ch }

func (s *Subscription[E]) confirmError() error { return s.state().err }

func (s *Subscription[E]) settle(err error) {
	st := s.state()
	st.once.Do(func() {
		st.err = err
		close(st.ch)
	})
}

func (s *Subscription[E]) send(opcode byte, payload []byte) error {
	header := []byte{0x80 | opcode}
	n := len(payload)
	switch {
	case n < 126:
		header = append(header, 0x80|byte(n))
	case n < 1<<16:
		header = append(header, 0x80|126, byte(n>>8), byte(n))
	default:
		header = append(header, 0x80|127)
		header = binary.BigEndian.AppendUint64(header, uint64(n))
	}
	var mask [4]byte
	if _, err := rand.Read(mask[:]); err != nil {
		return err
	}
	frame := make([]byte, 0, len(header)+4+n)
	frame = append(frame, header...)
	frame = append(frame, mask[:]...)
	for i, b := range payload {
		frame = append(frame, b^mask[i%4])
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, err := s.conn.Write(frame)
	return err
}

type wsClosed struct {
	code   int
	reason string
}

func (e *wsClosed) Error() string { return fmt.Sprintf("closed %d %s", e.code, e.reason) }

func (s *Subscription[E]) readFrame() (fin bool, opcode byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(s.br, h[:]); err != nil {
		return
	}
	fin, opcode = h[0]&0x80 != 0, h[0]&0x0F
	length := uint64(h[1] & 0x7F)
	switch length {
	case 126:
		var b [2]byte
		if _, err = io.ReadFull(s.br, b[:]); err != nil {
			return
		}
		length = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err = io.ReadFull(s.br, b[:]); err != nil {
			return
		}
		length = binary.BigEndian.Uint64(b[:])
	}
	if length > wsMaxMessageBytes {
		return false, 0, nil, &wsClosed{1009, "frame too large"}
	}
	var mask [4]byte
	masked := h[1]&0x80 != 0
	if masked {
		if _, err = io.ReadFull(s.br, mask[:]); err != nil {
			return
		}
	}
	payload = make([]byte, length)
	if _, err = io.ReadFull(s.br, payload); err != nil {
		return
	}
	if masked {
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
	}
	return
}

// readMessage returns the next text message, answering pings on the way (nil for binary ones).
func (s *Subscription[E]) readMessage() ([]byte, error) {
	var parts []byte
	var kind byte
	for {
		fin, opcode, payload, err := s.readFrame()
		if err != nil {
			return nil, err
		}
		switch opcode {
		case opPing:
			if err := s.send(opPong, payload); err != nil {
				return nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			code := 0
			if len(payload) >= 2 {
				code = int(binary.BigEndian.Uint16(payload[:2]))
				s.failMu.Lock()
				closing := s.closing
				s.failMu.Unlock()
				if !closing {
					_ = s.send(opClose, payload[:2])
				}
			}
			reason := ""
			if len(payload) > 2 {
				reason = string(payload[2:])
			}
			return nil, &wsClosed{code, reason}
		case opText, opBinary:
			kind, parts = opcode, append([]byte(nil), payload...)
		case opCont:
			parts = append(parts, payload...)
		}
		if fin {
			if kind != opText {
				return nil, nil
			}
			return parts, nil
		}
	}
}

func (s *Subscription[E]) readLoop() {
	defer func() {
		s.settle(s.err())
		close(s.done)
	}()
	for {
		raw, err := s.readMessage()
		if err != nil {
			var closed *wsClosed
			if errors.As(err, &closed) {
				s.fail(&SubscriptionClosedError{CloseCode: closed.code, Reason: closed.reason})
			} else {
				s.fail(&SubscriptionClosedError{Reason: err.Error()})
			}
			return
		}
		if raw == nil {
			continue
		}
		var msg struct {
			Type    string          `json:"type"`
			ID      *string         `json:"id"`
			Payload json.RawMessage `json:"payload"`
			Code    int             `json:"code"`
			Name    string          `json:"name"`
			Message string          `json:"message"`
			Details map[string]any  `json:"details"`
		}
		if json.Unmarshal(raw, &msg) != nil || (msg.ID != nil && *msg.ID != wsSubscriptionID) {
			continue
		}
		switch msg.Type {
		case "subscribed":
			s.settle(nil)
		case "event":
			s.settle(nil)
			var ev E
			if json.Unmarshal(msg.Payload, &ev) != nil {
				continue
			}
			if n, ok := any(&ev).(interface{ normalize() }); ok {
				n.normalize()
			}
			select {
			case s.events <- ev:
			default:
				s.fail(&SubscriptionClosedError{Reason: fmt.Sprintf("more than %d events queued unread", wsQueuedEvents)})
				_ = s.send(opClose, []byte{0x03, 0xE8})
				_ = s.conn.Close()
				return
			}
		case "error":
			e := &Error{Code: msg.Code, Name: msg.Name, Message: msg.Message, Details: msg.Details}
			if e.Name == "" {
				e.Name = CodeName(e.Code)
			}
			select {
			case <-s.confirmed():
				s.fail(e)
			default:
				s.settle(e)
			}
		}
	}
}

// connectionFailed wraps a transport failure so that errors.Is(err, ErrConnectionFailed) holds
// (and errors.Is(err, context.Canceled) too when that was the cause).
func connectionFailed(method, path string, err error) error {
	if strings.Contains(err.Error(), ErrConnectionFailed.Error()) {
		return err
	}
	return fmt.Errorf("svc: %s %s: %w: %w", method, path, ErrConnectionFailed, err)
}
