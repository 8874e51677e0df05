// Go programs taking zklockfs locks the way Go programmers do: goroutines
// with os.OpenFile on a lock directory and syscall.Flock on a lock file,
// and a lock tree walked with os.ReadDir and filepath.Walk and removed with
// os.RemoveAll.  Run by tests/integration/test_languages.py (standard
// library only; built offline: GO111MODULE=off go build -o locks locks.go);
// see tests/conformance/README.md.
//
//	locks MODE LOG TASKS CYCLES HOLD_MS PREFIX PATH
//	locks walk ROOT
//
// Each of TASKS goroutines (named PREFIX "t" N) does CYCLES critical
// sections on PATH.  A section appends "enter ID NS" to LOG once the lock
// is granted, sleeps HOLD_MS in 1 ms steps (time.Sleep parks the goroutine,
// and the scheduler runs another one on the OS thread it had), appends
// "leave ID NS", and only then gives the lock back; the goroutine then
// sleeps 1 ms before its next cycle, and wakes on whatever thread the
// scheduler gives it: often one whose open holds the lock for another
// goroutine, the more so under GOMAXPROCS=1.  NS is CLOCK_MONOTONIC; each
// line is one write to LOG opened O_APPEND.  Exit 0 once every task did its
// cycles; a failure is printed on stderr and the exit status is 1.
//
//	dir    os.OpenFile(PATH/ID, O_CREATE|O_WRONLY) / Close
//	file   each goroutine its own os.OpenFile(PATH): syscall.Flock
//	       LOCK_EX / LOCK_UN
//
// One OS thread (runtime.LockOSThread), two descriptors:
//
//	reopen, reflock, nb  as in locks.c: "granted 1|0" or "error ERRNO";
//	                     "nb ERRNO" and "after ERRNO"
//
// walk ROOT: "walk REL" for each directory filepath.Walk finds under ROOT,
// "list NAME" for each entry os.ReadDir(ROOT) returns, then os.RemoveAll
// and "removed".  Each of the three is tried whatever the others did; a
// failure is "error API: ..." on stderr, and the exit status is 1.
package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

var logf *os.File
var cycles, holdMs int

func nowNs() int64 {
	var ts syscall.Timespec
	// CLOCK_MONOTONIC = 1
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

func logline(what, id string) {
	if _, err := logf.WriteString(fmt.Sprintf("%s %s %d\n", what, id, nowNs())); err != nil {
		fail(id, err)
	}
}

func fail(id string, err error) {
	fmt.Fprintf(os.Stderr, "error %s: %v\n", id, err)
	os.Exit(1)
}

func section(id string) {
	logline("enter", id)
	for i := 0; i < holdMs; i++ {
		time.Sleep(time.Millisecond)
	}
	logline("leave", id)
}

func dirTask(id, path string) {
	for c := 0; c < cycles; c++ {
		f, err := os.OpenFile(filepath.Join(path, id), os.O_CREATE|os.O_WRONLY, 0644)
		if err != nil {
			fail(id, err)
		}
		section(id)
		if err := f.Close(); err != nil {
			fail(id, err)
		}
		time.Sleep(time.Millisecond)
	}
}

func fileTask(id, path string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0644)
	if err != nil {
		fail(id, err)
	}
	defer f.Close()
	for c := 0; c < cycles; c++ {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			fail(id, fmt.Errorf("flock(LOCK_EX): %w", err))
		}
		section(id)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
			fail(id, fmt.Errorf("flock(LOCK_UN): %w", err))
		}
		time.Sleep(time.Millisecond)
	}
}

func errnoOf(err error) int {
	var e syscall.Errno
	if err == nil {
		return 0
	}
	if errors.As(err, &e) {
		return int(e)
	}
	return -1
}

func oneThread(mode, path string) {
	runtime.LockOSThread()
	var released int32
	done := make(chan struct{})
	releaseLater := func(how func() error) {
		go func() {
			time.Sleep(300 * time.Millisecond)
			atomic.StoreInt32(&released, 1)
			if err := how(); err != nil {
				fail("releaser", err)
			}
			close(done)
		}()
	}
	report := func(err error) {
		if err != nil {
			fmt.Printf("error %d\n", errnoOf(err))
		} else {
			fmt.Printf("granted %d\n", atomic.LoadInt32(&released))
		}
	}
	if mode == "reopen" {
		first, err := os.OpenFile(filepath.Join(path, "a"), os.O_CREATE|os.O_WRONLY, 0644)
		if err != nil {
			fail("main", err)
		}
		releaseLater(first.Close)
		_, err = os.OpenFile(filepath.Join(path, "b"), os.O_CREATE|os.O_WRONLY, 0644)
		report(err)
		<-done
		return
	}
	first, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0644)
	if err != nil {
		fail("main", err)
	}
	second, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0644)
	if err != nil {
		fail("main", err)
	}
	if err := syscall.Flock(int(first.Fd()), syscall.LOCK_EX); err != nil {
		fail("main", err)
	}
	if mode == "reflock" {
		releaseLater(func() error { return syscall.Flock(int(first.Fd()), syscall.LOCK_UN) })
		report(syscall.Flock(int(second.Fd()), syscall.LOCK_EX))
		<-done
		return
	}
	fmt.Printf("nb %d\n", errnoOf(syscall.Flock(int(second.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)))
	if err := syscall.Flock(int(first.Fd()), syscall.LOCK_UN); err != nil {
		fail("main", err)
	}
	fmt.Printf("after %d\n", errnoOf(syscall.Flock(int(second.Fd()), syscall.LOCK_EX)))
}

func walk(root string) {
	failed := false
	check := func(api string, err error) {
		if err != nil {
			fmt.Fprintf(os.Stderr, "error %s: %v\n", api, err)
			failed = true
		}
	}
	check("filepath.Walk", filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() && p != root {
			rel, _ := filepath.Rel(root, p)
			fmt.Println("walk", rel)
		}
		return nil
	}))
	entries, err := os.ReadDir(root)
	check("os.ReadDir", err)
	for _, e := range entries {
		fmt.Println("list", e.Name())
	}
	err = os.RemoveAll(root)
	check("os.RemoveAll", err)
	if failed {
		os.Exit(1)
	}
	fmt.Println("removed")
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "walk" {
		walk(os.Args[2])
		return
	}
	if len(os.Args) != 8 {
		fmt.Fprintln(os.Stderr, "usage: locks MODE LOG TASKS CYCLES HOLD_MS PREFIX PATH | locks walk ROOT")
		os.Exit(2)
	}
	mode, log, prefix, path := os.Args[1], os.Args[2], os.Args[6], os.Args[7]
	tasks, _ := strconv.Atoi(os.Args[3])
	cycles, _ = strconv.Atoi(os.Args[4])
	holdMs, _ = strconv.Atoi(os.Args[5])
	switch mode {
	case "reopen", "reflock", "nb":
		oneThread(mode, path)
		return
	}
	var err error
	logf, err = os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		fail("main", err)
	}
	task := dirTask
	switch mode {
	case "dir":
	case "file":
		task = fileTask
	default:
		fail("main", fmt.Errorf("unknown mode %s", mode))
	}
	var wg sync.WaitGroup
	for i := 0; i < tasks; i++ {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			task(id, path)
		}(fmt.Sprintf("%st%d", prefix, i))
	}
	wg.Wait()
}
