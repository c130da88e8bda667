package kernelxdp

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Netns is a private network namespace holding a veth pair, Dev and Peer,
// both up, with IPv6 off (router solicitations and DAD would otherwise put
// frames on the wire). The kernel resolves ifindexes (test-run contexts,
// devmap entries, XDP attachment) in the calling thread's namespace: run
// such calls through Do. Close removes it all.
type Netns struct {
	// Name is the namespace's name under /run/netns.
	Name string
	// DevIndex and PeerIndex are the veth ifindexes inside the namespace.
	DevIndex, PeerIndex int
}

// Device names inside a Netns.
const (
	NetnsDev  = "xnic0"
	NetnsPeer = "xnic1"
)

// cmdTimeout bounds each ip(8) command.
const cmdTimeout = 10 * time.Second

// netnsSeq numbers the namespaces of this process.
var netnsSeq atomic.Uint32

// OpenNetns creates a namespace with a veth pair whose devices have queues
// RX and TX queues each (1 if queues < 1), so test runs may name
// rx_queue_index values below queues. ip(8) must be installed.
func OpenNetns(queues int) (*Netns, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	queues = max(queues, 1)
	name := fmt.Sprintf("xnic%d-%d", os.Getpid(), netnsSeq.Add(1))
	if err := ip("netns", "add", name); err != nil {
		return nil, err
	}
	ns := &Netns{Name: name}
	q := strconv.Itoa(queues)
	for _, args := range [][]string{
		{"netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"},
		{"netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"},
		{"-n", name, "link", "add", NetnsDev, "numtxqueues", q, "numrxqueues", q,
			"type", "veth", "peer", "name", NetnsPeer, "numtxqueues", q, "numrxqueues", q},
		{"-n", name, "link", "set", "lo", "up"},
		{"-n", name, "link", "set", NetnsDev, "up"},
		{"-n", name, "link", "set", NetnsPeer, "up"},
	} {
		if err := ip(args...); err != nil {
			ns.Close()
			return nil, err
		}
	}
	err := ns.Do(func() error {
		dev, err := net.InterfaceByName(NetnsDev)
		if err != nil {
			return fmt.Errorf("kernelxdp: %s in %s: %w", NetnsDev, name, err)
		}
		peer, err := net.InterfaceByName(NetnsPeer)
		if err != nil {
			return fmt.Errorf("kernelxdp: %s in %s: %w", NetnsPeer, name, err)
		}
		ns.DevIndex, ns.PeerIndex = dev.Index, peer.Index
		return nil
	})
	if err != nil {
		ns.Close()
		return nil, err
	}
	return ns, nil
}

// Close deletes the namespace and its devices.
func (ns *Netns) Close() error {
	if ns == nil || ns.Name == "" {
		return nil
	}
	err := ip("netns", "del", ns.Name)
	ns.Name = ""
	return err
}

// Do runs f on a locked OS thread inside the namespace and returns its
// error. The thread goes back to its own namespace afterwards; if that
// fails it stays locked, so the Go runtime ends it with the goroutine
// instead of reusing it. Do runs f in a goroutine of its own and waits.
func (ns *Netns) Do(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("kernelxdp: opening this thread's network namespace: %w", err)
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + ns.Name)
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("kernelxdp: opening namespace %s: %w", ns.Name, err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("kernelxdp: entering namespace %s: %w", ns.Name, err)
			return
		}
		err = f()
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

func ip(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kernelxdp: ip %v: %w: %s (is iproute2 installed and are we root?)", args, err, out)
	}
	return nil
}
