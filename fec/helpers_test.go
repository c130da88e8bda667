package fec_test

import (
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
	"github.com/xnic-dev/xnic/nic/nictest"
)

// sendFrame copies frame into a buffer of RX ring 0's pool and sends it on TX
// ring q, reclaiming while the ring is full (the device sends on its own time).
func sendFrame(t testing.TB, p nic.Port, q int, frame []byte) {
	t.Helper()
	tx := p.TxQueue(q)
	tx.Reclaim()
	b := p.RxQueue(0).Pool().Get()
	if b == nil {
		t.Fatal("pool empty")
	}
	b.Len = copy(b.Mem[b.Off:], frame)
	deadline := time.Now().Add(2 * time.Second)
	for tx.Send([]*dma.Buf{b}) != 1 {
		if time.Now().After(deadline) {
			b.Free()
			t.Fatal("TX ring full for 2 s")
		}
		time.Sleep(10 * time.Microsecond)
		tx.Reclaim()
	}
}

// recvFrames polls every RX ring until n frames arrived or 2 s passed, and
// returns copies of them (the buffers go back to their pools).
func recvFrames(t testing.TB, p nic.Port, n int) [][]byte {
	t.Helper()
	return nictest.RecvFrames(t, p, n, 2*time.Second)
}

// reclaimAll waits until every TX descriptor of the port is complete.
func reclaimAll(t testing.TB, p nic.Port, ringSize int) {
	t.Helper()
	nictest.ReclaimAll(t, p, ringSize, 2*time.Second)
}

// frameTo builds an Ethernet frame to dst of n bytes whose payload encodes seq.
func frameTo(dst, src []byte, n, seq int) []byte {
	f := make([]byte, n)
	copy(f, dst)
	copy(f[6:], src)
	f[12], f[13] = 0x88, 0xB5 // local experimental EtherType
	for i := 14; i < n; i++ {
		f[i] = byte(seq*7 + i)
	}
	if n >= 18 {
		f[14], f[15], f[16], f[17] = byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq)
	}
	return f
}
