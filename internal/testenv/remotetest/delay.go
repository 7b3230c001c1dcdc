package remotetest

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Delay is a TCP proxy that holds the bytes a client sends for a fixed
// latency before passing them to the server, as a network link with that
// one-way delay would: each request of a kept-alive HTTP connection
// reaches the server latency after it was sent, so every request takes
// latency longer. The server's answers pass at once. It stands in for
// netem (tc qdisc ... delay) where the kernel has none.
type Delay struct {
	ln      net.Listener
	target  string
	latency time.Duration
	wg      sync.WaitGroup // the accept loop and each connection's goroutines
	// mu guards conns and closed: the accept loop adds a client's
	// connection and its server's, the connection's goroutines remove them
	// when it ends, and Close sets closed and closes those left.
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// ListenDelay starts a delay proxy listening on addr (host:port; port 0
// picks a free one) that forwards each connection to target (host:port),
// its client's bytes latency late.
func ListenDelay(addr, target string, latency time.Duration) (*Delay, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("delay proxy: %w", err)
	}
	d := &Delay{ln: ln, target: target, latency: latency, conns: map[net.Conn]struct{}{}}
	d.wg.Add(1)
	go d.accept()
	return d, nil
}

// Addr returns the address the proxy listens on.
func (d *Delay) Addr() string { return d.ln.Addr().String() }

// Close stops the proxy, closing its connections, and waits for their
// goroutines to end.
func (d *Delay) Close() error {
	err := d.ln.Close()
	d.mu.Lock()
	d.closed = true
	for c := range d.conns {
		c.Close()
	}
	d.mu.Unlock()
	d.wg.Wait()
	return err
}

// accept takes connections until the listener closes.
func (d *Delay) accept() {
	defer d.wg.Done()
	for {
		client, err := d.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", d.target)
		if err != nil {
			client.Close()
			continue
		}
		if !d.track(client, server) {
			return
		}
		d.wg.Add(2)
		go d.up(client, server)
		go d.down(client, server)
	}
}

// track records a connection's two ends, unless the proxy is closing:
// then it closes them and returns false.
func (d *Delay) track(client, server net.Conn) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		client.Close()
		server.Close()
		return false
	}
	d.conns[client], d.conns[server] = struct{}{}, struct{}{}
	return true
}

// segment is bytes a client sent, and when they arrived.
type segment struct {
	data []byte
	at   time.Time
}

// up passes the client's bytes to the server, each latency after it
// arrived: a reader queues them as they come, so that bytes sent while
// earlier ones wait are not delayed twice.
func (d *Delay) up(client, server net.Conn) {
	defer d.wg.Done()
	queue := make(chan segment, 64)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32<<10)
			n, err := client.Read(buf)
			if n > 0 {
				queue <- segment{buf[:n], time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	for s := range queue {
		time.Sleep(time.Until(s.at.Add(d.latency)))
		if _, err := server.Write(s.data); err != nil {
			break
		}
	}
	d.end(client, server)
	for range queue { // let the reader finish: the closed client ends its Read
	}
}

// down passes the server's bytes to the client as they come (the kernel
// splices them).
func (d *Delay) down(client, server net.Conn) {
	defer d.wg.Done()
	io.Copy(client, server) // an error is a closed end: the connection is over either way
	d.end(client, server)
}

// end closes both ends of a connection and forgets them.
func (d *Delay) end(client, server net.Conn) {
	client.Close()
	server.Close()
	d.mu.Lock()
	delete(d.conns, client)
	delete(d.conns, server)
	d.mu.Unlock()
}
