package traffic

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"testing"
)

var (
	macA = net.HardwareAddr{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}
	macB = net.HardwareAddr{0x02, 0x78, 0x6e, 0x69, 0x63, 0x01}
)

func TestFrameDeterministicAndSpread(t *testing.T) {
	minLen, maxLen := MaxFrameLen, 0
	for i := range 10000 {
		f := Frame(7, i, macA, macB)
		if !bytes.Equal(f, Frame(7, i, macA, macB)) {
			t.Fatalf("frame %d differs between two calls", i)
		}
		if len(f) != FrameLen(7, i) || len(f) < MinFrameLen || len(f) > MaxFrameLen {
			t.Fatalf("frame %d: len %d, FrameLen %d", i, len(f), FrameLen(7, i))
		}
		minLen, maxLen = min(minLen, len(f)), max(maxLen, len(f))
		seed, idx, err := ParseData(f)
		if err != nil || seed != 7 || idx != i {
			t.Fatalf("ParseData(frame %d) = %d, %d, %v", i, seed, idx, err)
		}
		if !bytes.Equal(f[:6], macA) || !bytes.Equal(f[6:12], macB) {
			t.Fatalf("frame %d addresses % x", i, f[:12])
		}
	}
	// 10000 uniform draws over 1455 sizes reach close to both ends.
	if minLen > MinFrameLen+10 || maxLen < MaxFrameLen-10 {
		t.Errorf("sizes span %d..%d, want about %d..%d", minLen, maxLen, MinFrameLen, MaxFrameLen)
	}
	if bytes.Equal(Frame(7, 3, macA, macB)[offPayload:60], Frame(8, 3, macA, macB)[offPayload:60]) {
		t.Error("streams 7 and 8 have the same payload for frame 3")
	}
}

func TestCheckFrame(t *testing.T) {
	for i := range 50 {
		f := Frame(-3, i, macA, macB)
		if err := CheckFrame(f, -3, i, macA, macB); err != nil {
			t.Fatalf("intact frame %d: %v", i, err)
		}
		// Every single-byte corruption is caught.
		for off := range f {
			f[off] ^= 0x10
			if CheckFrame(f, -3, i, macA, macB) == nil {
				t.Fatalf("frame %d with byte %d flipped passes", i, off)
			}
			f[off] ^= 0x10
		}
		if CheckFrame(f[:len(f)-1], -3, i, macA, macB) == nil {
			t.Fatalf("truncated frame %d passes", i)
		}
		if CheckFrame(f, -3, i+1, macA, macB) == nil {
			t.Fatalf("frame %d passes as frame %d", i, i+1)
		}
	}
	f := Frame(1, 0, macA, macB)
	err := CheckFrame(append(f, 0, 0, 0, 0), 1, 0, macA, macB)
	if err == nil || !strings.Contains(err.Error(), "SECRC") {
		t.Errorf("frame with FCS: %v, want a hint about RCTL.SECRC", err)
	}
	if _, _, err := ParseData(FlowFrame(1, 1, macA, macB)); !errors.Is(err, ErrNotData) {
		t.Errorf("ParseData(flow frame) = %v, want ErrNotData", err)
	}
}

func TestFrameNoAllocs(t *testing.T) {
	buf := make([]byte, 0, MaxFrameLen)
	i := 0
	allocs := testing.AllocsPerRun(200, func() {
		buf = AppendFrame(buf[:0], 99, i, macA, macB)
		if err := CheckFrame(buf, 99, i, macA, macB); err != nil {
			t.Fatal(err)
		}
		if Classify(buf) != KindData {
			t.Fatal("not classified as data")
		}
		i++
	})
	if allocs != 0 {
		t.Errorf("AppendFrame+CheckFrame+Classify: %v allocations per frame, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(200, func() {
		buf = AppendFlowFrame(buf[:0], i%64, i, macA, macB)
		if _, _, err := ParseFlow(buf); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if allocs != 0 {
		t.Errorf("AppendFlowFrame+ParseFlow: %v allocations per frame, want 0", allocs)
	}
}

func TestFlowFrames(t *testing.T) {
	seen := map[[12]byte]int{}
	for flow := range 300 {
		f := FlowFrame(flow, flow*3, macA, macB)
		if len(f) != MinFrameLen {
			t.Fatalf("flow frame length %d", len(f))
		}
		gf, gs, err := ParseFlow(f)
		if err != nil || gf != flow || gs != flow*3 {
			t.Fatalf("ParseFlow = %d, %d, %v; want %d, %d", gf, gs, err, flow, flow*3)
		}
		tuple := FlowHashInputUDP4(flow)
		if !bytes.Equal(f[offIPv4+12:offIPv4+20], tuple[:8]) || !bytes.Equal(f[offUDP:offUDP+4], tuple[8:]) {
			t.Fatalf("flow %d: hash input % x does not match the frame's headers", flow, tuple)
		}
		if other, dup := seen[tuple]; dup {
			t.Fatalf("flows %d and %d share a 5-tuple", other, flow)
		}
		seen[tuple] = flow
		f[offIPv4+8]-- // TTL change breaks the header checksum
		if _, _, err := ParseFlow(f); !errors.Is(err, ErrNotFlow) {
			t.Fatalf("flow frame with bad IP checksum: %v", err)
		}
	}
}

// The first verification row of Microsoft's RSS specification.
func TestToeplitzKnownAnswer(t *testing.T) {
	key, _ := hex.DecodeString("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")
	ipv4 := []byte{66, 9, 149, 187, 161, 142, 100, 80}
	if h := Toeplitz(key, ipv4); h != 0x323e8fc2 {
		t.Errorf("IPv4 hash %#x, want 0x323e8fc2", h)
	}
	tcp := append(append([]byte{}, ipv4...), 2794>>8, 2794&0xff, 1766>>8, 1766&0xff)
	if h := Toeplitz(key, tcp); h != 0x51ccc178 {
		t.Errorf("TCP/IPv4 hash %#x, want 0x51ccc178", h)
	}
	if h := Toeplitz(key[:8], tcp); h != 0 {
		t.Errorf("short key: %#x, want 0", h)
	}
}
