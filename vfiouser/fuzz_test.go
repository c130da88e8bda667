package vfiouser_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/igb/igbsim"
	"github.com/xnic-dev/xnic/vfiouser"
	"github.com/xnic-dev/xnic/vfiouser/vfiousertest"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzSession from the seeds")

// msg encodes one message.
func msg(id uint16, cmd vfiouser.Command, flags uint32, payload []byte) []byte {
	b := make([]byte, vfiouser.HeaderSize+len(payload))
	vfiouser.PutHeader(b, vfiouser.Header{ID: id, Command: cmd, Size: uint32(len(b)), Flags: flags})
	copy(b[vfiouser.HeaderSize:], payload)
	return b
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func u32s(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = le.AppendUint32(b, v)
	}
	return b
}

func rw(region uint32, off uint64, count uint32, data []byte) []byte {
	return append(append(le.AppendUint64(nil, off), u32s(region, count)...), data...)
}

// fuzzSeeds are whole client byte streams: valid sessions and broken ones.
func fuzzSeeds() [][]byte {
	ver := msg(1, vfiouser.CmdVersion, 0, append(u32s(0), `{"capabilities":{"max_msg_fds":8,"write_multiple":true}}`+"\x00"...))
	dmaMap := func(iova, size uint64) []byte {
		return append(u32s(32, 3), append(le.AppendUint64(nil, 0), append(le.AppendUint64(nil, iova), le.AppendUint64(nil, size)...)...)...)
	}
	dmaUnmap := func(iova, size uint64) []byte {
		return append(u32s(24, 0), append(le.AppendUint64(nil, iova), le.AppendUint64(nil, size)...)...)
	}
	return [][]byte{
		ver,
		cat(ver, msg(2, vfiouser.CmdDeviceGetInfo, 0, u32s(16, 0, 0, 0)),
			msg(3, vfiouser.CmdRegionInfo, 0, u32s(32, 0, 0, 0, 0, 0, 0, 0)),
			msg(4, vfiouser.CmdRegionInfo, 0, u32s(32, 0, 7, 0, 0, 0, 0, 0)),
			msg(5, vfiouser.CmdRegionInfo, 0, u32s(32, 0, 9, 0, 0, 0, 0, 0)),
			msg(6, vfiouser.CmdIRQInfo, 0, u32s(16, 0, 2, 0))),
		cat(ver, msg(2, vfiouser.CmdRegionRead, 0, rw(7, 0, 256, nil)),
			msg(3, vfiouser.CmdRegionWrite, 0, rw(7, 4, 2, []byte{6, 0})),
			msg(4, vfiouser.CmdRegionRead, 0, rw(0, 8, 4, nil)),
			msg(5, vfiouser.CmdRegionRead, 0, rw(0, 0x5400, 8, nil)),
			msg(6, vfiouser.CmdRegionRead, 0, rw(0, 0x5401, 1, nil)),
			msg(7, vfiouser.CmdRegionWrite, 0, rw(0, 0x5400, 2, []byte{1, 2})),
			msg(8, vfiouser.CmdRegionWrite, vfiouser.FlagNoReply, rw(0, 0x5400, 4, []byte{1, 2, 3, 4})),
			msg(9, vfiouser.CmdRegionRead, 0, rw(3, 0x2000, 8, nil))),
		cat(ver, msg(2, vfiouser.CmdDMAMap, 0, dmaMap(0x1000, 0x1000)),
			msg(3, vfiouser.CmdDMAMap, 0, dmaMap(0x1800, 0x1000)),
			msg(4, vfiouser.CmdDMAUnmap, 0, dmaUnmap(0x1000, 0x1000)),
			msg(5, vfiouser.CmdDMAUnmap, 0, dmaUnmap(0x1000, 0x1000))),
		cat(ver, msg(2, vfiouser.CmdSetIRQs, 0, u32s(20, 0x21, 0, 0, 1)),
			msg(3, vfiouser.CmdSetIRQs, 0, u32s(20, 0x11, 0, 0, 1)),
			msg(4, vfiouser.CmdSetIRQs, 0, append(u32s(20, 0x0A, 2, 0, 3), 1, 0, 1)),
			msg(5, vfiouser.CmdSetIRQs, 0, u32s(20, 0x21, 2, 0, 0)),
			msg(6, vfiouser.CmdSetIRQs, 0, u32s(20, 0x24, 2, 0, 4))),
		cat(ver, msg(2, vfiouser.CmdRegionWriteMulti, 0, append(le.AppendUint64(nil, 1), append(rw(0, 0x5400, 4, nil), 1, 2, 3, 4, 0, 0, 0, 0)...))),
		cat(ver, msg(2, vfiouser.CmdDeviceReset, 0, nil), msg(3, vfiouser.CmdDeviceFeature, 0, u32s(8, 1<<16|1))),
		cat(ver, msg(2, vfiouser.CmdDMARead, vfiouser.FlagReply, make([]byte, 16))),
		msg(1, vfiouser.CmdDeviceGetInfo, 0, u32s(16, 0, 0, 0)),
		cat(ver, u32s(0x00020002, 8, 0, 0)),
		cat(ver, u32s(0x00090003, 0x7FFFFFFF, 0, 0)),
		msg(1, vfiouser.CmdVersion, 0, append(u32s(0), `{"capabilities":{"max_data_xfer_size":"x"}}`...)),
		cat(ver, msg(2, vfiouser.CmdDMAMap, 0, dmaMap(0x1000, 0x1000)), msg(3, vfiouser.CmdDMAMap, 0, dmaMap(0x3000, 0x1000)),
			msg(4, vfiouser.CmdDMAUnmap, 0, dmaUnmap(0x1800, 0x1000)), msg(5, vfiouser.CmdDMAUnmap, 0, dmaUnmap(0, 0x10000)),
			msg(6, vfiouser.CmdDMAUnmap, 0, append(u32s(24, 2), make([]byte, 16)...))),
	}
}

// FuzzSession feeds a byte stream to a session as a client would send it. The
// contract: no panic, the session ends when the stream does (or refuses it
// sooner), and it leaves nothing mapped or enabled on the model.
func FuzzSession(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		m, err := igbsim.New(igbsim.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		sc, cc, err := vfiousertest.Pair()
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		errc := make(chan error, 1)
		go func() { errc <- vfiouser.Serve(context.Background(), sc, m.SimDevice(), vfiouser.Options{}) }()
		drained := make(chan struct{})
		go func() { io.Copy(io.Discard, cc); close(drained) }()
		cc.Write(stream) // the server may close early: errors are fine
		cc.CloseWrite()
		select {
		case <-errc:
		case <-time.After(10 * time.Second):
			t.Fatal("the session did not end after the stream did")
		}
		<-drained
		if n := m.Memory().Regions(); n != 0 {
			t.Fatalf("%d ranges left mapped on the model", n)
		}
		if n := m.SimDevice().VectorsEnabled(); n != 0 {
			t.Fatalf("%d model vectors left enabled", n)
		}
	})
}

// FuzzParse runs every payload parser on arbitrary bytes: never a panic, and a
// parse that succeeds returns fields consistent with the bytes.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds() {
		if len(s) > vfiouser.HeaderSize {
			f.Add(s[vfiouser.HeaderSize:])
		}
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if h, err := vfiouser.ParseHeader(p, 1<<20); err == nil && (h.Size < vfiouser.HeaderSize || h.Size > 1<<20) {
			t.Fatalf("header size %d accepted", h.Size)
		}
		for _, cmd := range []vfiouser.Command{vfiouser.CmdRegionRead, vfiouser.CmdRegionWrite} {
			r := &vfiouser.Request{Header: vfiouser.Header{Command: cmd}, Payload: p}
			if rw, err := vfiouser.ParseRegionRW(r); err == nil && cmd == vfiouser.CmdRegionWrite && len(rw.Data) != int(rw.Count) {
				t.Fatalf("write of count %d with %d bytes accepted", rw.Count, len(rw.Data))
			}
		}
		r := &vfiouser.Request{Payload: p}
		if m, err := vfiouser.ParseDMAMap(r); err == nil && (m.Size == 0 || m.Address+m.Size < m.Address) {
			t.Fatalf("DMA_MAP %+v accepted", m)
		}
		_, _ = vfiouser.ParseDMAUnmap(r)
		if s, err := vfiouser.ParseIRQSet(r); err == nil && s.Flags&vfiouser.IRQSetDataBool != 0 && len(s.Bools) != int(s.Count) {
			t.Fatalf("SET_IRQS with %d booleans for count %d accepted", len(s.Bools), s.Count)
		}
		if ws, err := vfiouser.ParseWriteMulti(r); err == nil {
			for _, w := range ws {
				if len(w.Data) != int(w.Count) || w.Count > 8 {
					t.Fatalf("multi write %+v accepted", w)
				}
			}
		}
		_, _ = vfiouser.ParseVersion(r)
	})
}

// TestFuzzCorpus keeps the committed corpus in step with the seeds
// (go test -run TestFuzzCorpus -update-corpus rewrites it).
func TestFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzSession")
	for i, s := range fuzzSeeds() {
		path := filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", s)
		if *updateCorpus {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update-corpus)", err)
		}
		if string(got) != want {
			t.Fatalf("%s differs from seed %d (run with -update-corpus)", path, i)
		}
	}
}
