// Command delayproxy forwards TCP connections to a server, holding the
// bytes each client sends for a fixed latency first (remotetest.Delay),
// so that every request of an HTTP client takes that much longer, as
// over a link with that one-way delay. make remote-bench LATENCY=20ms
// puts it in front of versitygw:
//
//	delayproxy -latency 20ms -listen 127.0.0.1:0 127.0.0.1:7070
//
// It prints the address it listens on, one line, and runs until killed.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
)

func main() {
	latency := flag.Duration("latency", 0, "the delay of every byte a client sends")
	listen := flag.String("listen", "127.0.0.1:0", "the address to listen on")
	flag.Parse()
	if flag.NArg() != 1 {
		log.Fatal("usage: delayproxy [-latency 20ms] [-listen 127.0.0.1:0] SERVER_HOST:PORT")
	}
	d, err := remotetest.ListenDelay(*listen, flag.Arg(0), *latency)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(d.Addr())
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	d.Close()
}
