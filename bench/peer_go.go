// bench/peer_go.go - go-zookeeper's zk.Lock as a side of `make bench`: the
// fastest ZooKeeper lock library we can run here, beside zklockfs and the
// C recipe on the same server in the same run.
//
// Built offline in GOPATH mode with Debian's golang-go and
// golang-github-samuel-go-zookeeper-dev (bench/run does it):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o peer_go peer_go.go
//
//	peer_go HOST:PORT[,...] ROOT SESSIONS SECONDS
//
// Opens SESSIONS sessions, one per goroutine, each cycling zk.Lock() and
// Unlock() on a lock of its own, ROOT/g<pid>-<i> (ROOT, its parents and
// the locks made first).  Prints "ready" once every session is open and every lock made,
// waits for a line on stdin, cycles for SECONDS (after two cycles each that
// are not counted) and prints one JSON object: cycles, seconds, and the
// cycle times' p50 and p99 in ms.  A session per process, as the issue's
// peers were measured, is SESSIONS=1 in N processes, whose counts bench/run
// adds; SESSIONS=64 in one process is the library's view of the server's
// ceiling.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/samuel/go-zookeeper/zk"
)

func die(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "peer_go: "+format+"\n", args...)
	os.Exit(1)
}

func connect(servers []string) *zk.Conn {
	conn, events, err := zk.Connect(servers, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		die("connect: %v", err)
	}
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() {
					for range events {
					}
				}()
				return conn
			}
		case <-deadline:
			die("no session within 30 s")
		}
	}
}

func main() {
	// die with bench/run
	syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG,
		uintptr(syscall.SIGKILL), 0)
	if len(os.Args) != 5 {
		die("usage: peer_go HOST:PORT[,...] ROOT SESSIONS SECONDS")
	}
	servers := strings.Split(os.Args[1], ",")
	root := os.Args[2]
	n, err1 := strconv.Atoi(os.Args[3])
	secs, err2 := strconv.ParseFloat(os.Args[4], 64)
	if err1 != nil || err2 != nil || n < 1 {
		die("bad SESSIONS or SECONDS")
	}
	conns := make([]*zk.Conn, n)
	locks := make([]*zk.Lock, n)
	acl := zk.WorldACL(zk.PermAll)
	for i := range conns {
		conns[i] = connect(servers)
		if i == 0 { // ROOT and its parents, as a lock library's users make them
			for at := 1; at <= len(root); at++ {
				if at == len(root) || root[at] == '/' {
					_, err := conns[0].Create(root[:at], nil, 0, acl)
					if err != nil && err != zk.ErrNodeExists {
						die("create %s: %v", root[:at], err)
					}
				}
			}
		}
		path := fmt.Sprintf("%s/g%d-%d", root, os.Getpid(), i)
		if _, err := conns[i].Create(path, nil, 0, acl); err != nil && err != zk.ErrNodeExists {
			die("create %s: %v", path, err)
		}
		locks[i] = zk.NewLock(conns[i], path, acl)
	}
	cycle := func(i int) {
		if err := locks[i].Lock(); err != nil {
			die("lock: %v", err)
		}
		if err := locks[i].Unlock(); err != nil {
			die("unlock: %v", err)
		}
	}
	for i := range locks { // warm-up, not counted
		cycle(i)
		cycle(i)
	}
	fmt.Println("ready")
	if !bufio.NewScanner(os.Stdin).Scan() {
		os.Exit(0)
	}
	var mu sync.Mutex
	var times []float64
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(time.Duration(secs * float64(time.Second)))
	for i := range locks {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var mine []float64
			for time.Now().Before(end) {
				t0 := time.Now()
				cycle(i)
				mine = append(mine, float64(time.Since(t0).Microseconds())/1000.0)
			}
			mu.Lock()
			times = append(times, mine...)
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	took := time.Since(start).Seconds()
	sort.Float64s(times)
	pct := func(p float64) float64 {
		if len(times) == 0 {
			return 0
		}
		return times[int(p*float64(len(times)-1))]
	}
	out, _ := json.Marshal(map[string]interface{}{
		"cycles": len(times), "seconds": took,
		"p50_ms": pct(0.50), "p99_ms": pct(0.99),
	})
	fmt.Println(string(out))
	for _, c := range conns {
		c.Close()
	}
}
