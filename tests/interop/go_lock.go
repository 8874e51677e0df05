// One go-zookeeper zk.Lock contender, driven over stdin/stdout, for
// tests/integration/test_interop.py.
//
// Built offline in GOPATH mode with Debian's golang-go and
// golang-github-samuel-go-zookeeper-dev:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o go_lock go_lock.go
//
// (go-zookeeper/zk, the fork that replaced it, has the same zk.Lock and the
// same parseSeq; it is not packaged in Debian 12.)
//
//	go_lock HOST:PORT[,HOST:PORT...] LOCKPATH
//
// Prints "ready <session id, hex>" once its session is open. Commands, one
// a line on stdin:
//
//	acquire   -> "acquired" | "error ..."  (asynchronous: zk.Lock has no
//	             timeout, so other commands are answered while it waits)
//	release   -> "released" | "error ..."
//	quit (or EOF) -> closes the session (its nodes go), "bye", exit 0
//
// zk.Lock creates <LOCKPATH>/_c_<guid>-lock-<seq>, reads every child's
// sequence number as what follows its last '-', and waits on the child with
// the next lower number: a zklockfs entry NAME-lock-N or NAME-read-lock-N
// (naming=curator) is such a contender.
package main

import (
	"bufio"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/samuel/go-zookeeper/zk"
)

var outMu sync.Mutex

func say(format string, args ...interface{}) {
	line := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.WriteString(line + "\n")
}

func main() {
	// die with the test runner
	syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG,
		uintptr(syscall.SIGKILL), 0)
	log.SetOutput(os.Stderr)
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go_lock HOST:PORT[,...] LOCKPATH")
		os.Exit(2)
	}
	servers := strings.Split(os.Args[1], ",")
	conn, events, err := zk.Connect(servers, 10*time.Second)
	if err != nil {
		say("error connect: %v", err)
		os.Exit(1)
	}
	deadline := time.After(30 * time.Second)
	for connected := false; !connected; {
		select {
		case ev := <-events:
			connected = ev.State == zk.StateHasSession
		case <-deadline:
			say("error no session within 30 s")
			os.Exit(1)
		}
	}
	go func() { // keep the event channel drained
		for range events {
		}
	}()
	lock := zk.NewLock(conn, os.Args[2], zk.WorldACL(zk.PermAll))
	say("ready %x", conn.SessionID())

	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch strings.TrimSpace(in.Text()) {
		case "acquire":
			go func() {
				if err := lock.Lock(); err != nil {
					say("error lock: %v", err)
				} else {
					say("acquired")
				}
			}()
		case "release":
			if err := lock.Unlock(); err != nil {
				say("error unlock: %v", err)
			} else {
				say("released")
			}
		case "quit":
			conn.Close()
			say("bye")
			return
		case "":
		default:
			say("error unknown command %q", in.Text())
		}
	}
	conn.Close()
	say("bye")
}
