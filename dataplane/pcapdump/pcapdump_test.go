package pcapdump

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/gopacket/pcapgo"
	"github.com/xnic-dev/xnic/dataplane/bpf"
)

func TestWriteAndRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.pcapng")
	f, err := ParseFilter("tx,XDP_DROP")
	if err != nil {
		t.Fatal(err)
	}
	w, err := Create(path, []string{"port0", "port1"}, f)
	if err != nil {
		t.Fatal(err)
	}
	if w.Want(bpf.ActionPass) || !w.Want(bpf.ActionTX) || !w.Want(bpf.ActionDrop) || w.Want(bpf.Action(9)) {
		t.Error("filter tx,drop wrong")
	}
	f1 := bytes.Repeat([]byte{0xab}, 61) // odd length: padding
	f2 := bytes.Repeat([]byte{0xcd}, 64)
	allocs := testing.AllocsPerRun(10, func() { w.Dump(1, 0, bpf.ActionTX, f2) })
	if allocs != 0 {
		t.Errorf("Dump allocates %.1f", allocs)
	}
	w.Dump(0, 3, bpf.ActionDrop, f1)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewNgReader(bytes.NewReader(data), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	var ifs []int
	for {
		d, ci, err := r.ReadPacketData()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d)
		ifs = append(ifs, ci.InterfaceIndex)
	}
	if len(got) != 12 || !bytes.Equal(got[11], f1) || !bytes.Equal(got[0], f2) || ifs[0] != 1 || ifs[11] != 0 {
		t.Errorf("read %d frames (ifaces %v), want 12: 11 of f2 on 1, then f1 on 0", len(got), ifs)
	}
	if n := r.NInterfaces(); n != 2 {
		t.Errorf("%d interfaces", n)
	}
	if i, _ := r.Interface(1); i.Name != "port1" {
		t.Errorf("interface 1 named %q", i.Name)
	}
	if !bytes.Contains(data, []byte("XDP_DROP queue 3")) || !bytes.Contains(data, []byte("XDP_TX queue 0")) {
		t.Error("verdict comments missing")
	}
	// Every block's trailing length equals its leading length.
	for o := 0; o < len(data); {
		n := int(binary.LittleEndian.Uint32(data[o+4:]))
		if n%4 != 0 || o+n > len(data) || binary.LittleEndian.Uint32(data[o+n-4:]) != uint32(n) {
			t.Fatalf("block at %d: bad length %d", o, n)
		}
		o += n
	}
	if tcpdump, err := exec.LookPath("tcpdump"); err == nil {
		out, err := exec.Command(tcpdump, "-nr", path).CombinedOutput()
		if err != nil || bytes.Count(out, []byte("\n")) < 12 {
			t.Errorf("tcpdump -r: %v\n%s", err, out)
		}
	} else {
		t.Log("tcpdump not installed: checked with gopacket's pcapng reader only")
	}
	if _, err := ParseFilter("bogus"); err == nil {
		t.Error("bogus verdict accepted")
	}
}
