package main

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/internal/kernelxdp"
)

func needKernel(t *testing.T) {
	t.Helper()
	if err := kernelxdp.Available(); err != nil {
		t.Skipf("no kernel oracle: %v", err)
	}
}

// prog bench --kernel prints the kernel's figure beside xnic's each round,
// and a ratio that is the two medians'.
func TestProgBenchKernel(t *testing.T) {
	needKernel(t)
	in := writeTestPcap(t, progUDPFrame(9), progUDPFrame(53))
	stdout, stderr, code := progCmd(t, "prog", "bench", testObj, "--in", in, "--repeat", "20000", "--rounds", "3", "--kernel")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rounds := regexp.MustCompile(`(?m)^round \d: ([0-9.]+) ns/run, kernel ([0-9.]+) ns/run$`).FindAllStringSubmatch(stdout, -1)
	if len(rounds) != 3 {
		t.Fatalf("want 3 round lines with the kernel's figure:\n%s", stdout)
	}
	m := regexp.MustCompile(`median ([0-9.]+) ns/run; kernel JIT ([0-9.]+) ns/run, xnic/kernel ([0-9.]+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no summary with the kernel's figure:\n%s", stdout)
	}
	x, _ := strconv.ParseFloat(m[1], 64)
	k, _ := strconv.ParseFloat(m[2], 64)
	r, _ := strconv.ParseFloat(m[3], 64)
	if k <= 0 || x <= 0 || r <= 0 {
		t.Fatalf("figures not positive: %q", m[0])
	}
	if want := x / max(k, 1); r < want*0.99-0.01 || r > want*1.01+0.01 {
		t.Errorf("ratio %.2f, want xnic/kernel = %.2f", r, want)
	}
}

// The entries --map gives xnic's maps reach the kernel's: an LPM trie, a
// hash, an array and a per-CPU array (on every CPU); an empty array slot
// stays empty.
func TestKernelBenchCopiesMaps(t *testing.T) {
	needKernel(t)
	for _, tc := range []struct {
		obj, arg, name string
		key, value     []byte
	}{
		{lpmObj, "acl_v4:16 0 0 0 10 1 0 0=1 0 0 0 0 0 0 0", "acl_v4", []byte{16, 0, 0, 0, 10, 1, 0, 0}, []byte{1, 0, 0, 0, 0, 0, 0, 0}},
		{"../../examples/xdp/xdp_mapinmap_acl.o", "acl_port1:80 0 0 0=1", "acl_port1", []byte{80, 0, 0, 0}, []byte{1}},
		{"../../examples/xdp/xdp_mapinmap_acl.o", "drops:3 0 0 0=7 0 0 0 0 0 0 0", "drops", []byte{3, 0, 0, 0}, []byte{7, 0, 0, 0, 0, 0, 0, 0}},
		{"../../examples/xdp/xdp_drop_count.o", "rxcnt:17 0 0 0=9 0 0 0 0 0 0 0", "rxcnt", []byte{17, 0, 0, 0}, []byte{9, 0, 0, 0, 0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, p, err := loadProg(tc.obj, &progSelect{maps: listFlag{tc.arg}}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			kb, err := openKernelBench(tc.obj, p.Name(), c, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			defer kb.close()
			km, err := kb.obj.Map(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			var vals [][]byte
			if km.Type() == ebpf.PerCPUArray {
				err = km.Lookup(tc.key, &vals)
			} else {
				v := make([]byte, km.ValueSize())
				err = km.Lookup(tc.key, &v)
				vals = [][]byte{v}
			}
			if err != nil {
				t.Fatalf("the kernel's %s has no %x: %v", tc.name, tc.key, err)
			}
			for cpu, v := range vals {
				if !bytes.Equal(v, tc.value) {
					t.Errorf("CPU %d: the kernel's %s[%x] = %x, want %x", cpu, tc.name, tc.key, v, tc.value)
				}
			}
			if km.Type() == ebpf.Array { // another slot: not written
				other := []byte{0, 0, 0, 0}
				v := make([]byte, km.ValueSize())
				if err := km.Lookup(other, &v); err != nil || !bytes.Equal(v, make([]byte, len(v))) {
					t.Errorf("the kernel's %s[0] = %x (%v), want zero", tc.name, v, err)
				}
			}
		})
	}
}

// The same program, maps and frame give the same verdict on both sides:
// 10.1.2.3 is in the ACL's 10.1/16 only when --map put it there.
func TestKernelBenchSameVerdict(t *testing.T) {
	needKernel(t)
	frame := progUDPFrame(53)
	copy(frame[30:34], []byte{10, 1, 2, 3})
	for _, maps := range []listFlag{nil, {"acl_v4:16 0 0 0 10 1 0 0=1 0 0 0 0 0 0 0"}} {
		c, p, err := loadProg(lpmObj, &progSelect{maps: maps}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := openKernelBench(lpmObj, p.Name(), c, io.Discard)
		if err != nil {
			c.Close()
			t.Fatal(err)
		}
		_, kv, err := kernelxdp.Bench(kb.prog, frame, 1)
		if err != nil {
			t.Fatal(err)
		}
		var f bpf.Frame
		if err := testRunFrame(&f, frame, 1, 0); err != nil {
			t.Fatal(err)
		}
		if xv := bpf.NewRunner(0).Run(p, &f); uint32(xv) != kv {
			t.Errorf("--map %v: xnic %v, kernel %d", maps, xv, kv)
		}
		kb.close()
		c.Close()
	}
}

// --kernel refuses --fib (the kernel has its own routes) before loading.
func TestProgBenchKernelFib(t *testing.T) {
	in := writeTestPcap(t, progUDPFrame(9))
	_, stderr, code := progCmd(t, "prog", "bench", testObj, "--in", in, "--kernel", "--fib", "x.json")
	if code != 2 || !strings.Contains(stderr, "--kernel with --fib") {
		t.Errorf("exit %d, %q", code, stderr)
	}
}
