package dataplane_test

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/xnic-dev/xnic/dataplane"
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/examples"
	"github.com/xnic-dev/xnic/igb"
	"github.com/xnic-dev/xnic/igb/igbsim"
)

// udpFrame is a 64-byte Ethernet/IPv4/UDP frame to port dport.
func udpFrame(dport uint16) []byte {
	f := make([]byte, 64)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 0x01})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 0x02})
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	f[14], f[23] = 0x45, 17 // IPv4, 20-byte header; UDP
	binary.BigEndian.PutUint16(f[16:], 50)
	binary.BigEndian.PutUint16(f[36:], dport)
	return f
}

// openSimIGB opens the igb driver on a simulated 82576 (no hardware, no root):
// the same driver code that runs on a card bound to vfio-pci.
func openSimIGB() (*igbsim.Model, *igb.Port, error) {
	m, err := igbsim.New(igbsim.Config{Queues: 1, AutonegDelay: time.Millisecond})
	if err != nil {
		return nil, nil, err
	}
	p, err := igb.Open(m.Device(), igb.Config{Queues: 1, Promisc: true, LinkTimeout: 2 * time.Second})
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, p, nil
}

// exampleProgram loads one of the example XDP objects and picks its program.
func exampleProgram(name string) (*bpf.Collection, *bpf.Program, error) {
	obj, err := examples.Object(name)
	if err != nil {
		return nil, nil, err
	}
	coll, err := bpf.LoadBytes(obj, nil)
	if err != nil {
		return nil, nil, err
	}
	prog, err := coll.Program(name)
	if err != nil {
		return nil, nil, err
	}
	return coll, prog, nil
}

func received(e *dataplane.Engine) uint64 {
	s := e.Snapshot()
	return s.Totals()[dataplane.RxPackets]
}

// Run an XDP program on every frame a port receives: the speed reference
// drops UDP to port 9 and passes the rest (with no TAP configured, passed
// frames are counted and recycled).
func ExampleEngine() {
	model, port, err := openSimIGB()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer model.Close()
	_, prog, err := exampleProgram("xdp_reference")
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := dataplane.New(dataplane.Config{
		Ports:   []dataplane.PortConfig{{Port: port}},
		Program: dataplane.BPF(prog),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := e.Start(); err != nil {
		fmt.Println(err)
		return
	}
	for i := 0; i < 30; i++ {
		dport := uint16(9)
		if i%3 == 0 {
			dport = 53
		}
		model.Inject(udpFrame(dport)) // a frame from the wire
	}
	deadline := time.Now().Add(5 * time.Second)
	for received(e) < 30 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := e.Stop(); err != nil {
		fmt.Println(err)
	}
	s := e.Snapshot()
	t := s.Totals()
	fmt.Println("received", t[dataplane.RxPackets], "dropped", t[dataplane.RxXDPDrop], "passed", t[dataplane.RxXDPPass])
	if err := port.Close(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// received 30 dropped 20 passed 10
}

// Receive frames in Go: the program redirects each frame to the xskmap entry
// of its receive queue, where an XSK (xnic's in-process AF_XDP socket) takes
// it. The consumer owns each frame until it releases it.
func ExampleEngine_BindXSK() {
	model, port, err := openSimIGB()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer model.Close()
	coll, prog, err := exampleProgram("xdp_xsk")
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := dataplane.New(dataplane.Config{
		Ports:   []dataplane.PortConfig{{Port: port}},
		Program: dataplane.BPF(prog),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	xsks, err := coll.Map("xsks")
	if err != nil {
		fmt.Println(err)
		return
	}
	xsk, err := e.BindXSK(xsks, 0, 0, 0, 64) // entry 0 = RX queue 0 of port 0
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := e.Start(); err != nil {
		fmt.Println(err)
		return
	}
	model.Inject(udpFrame(4789))
	bufs := make([]*dma.Buf, 8)
	n := xsk.Recv(bufs, 5*time.Second)
	for _, b := range bufs[:n] {
		data := b.Data()
		fmt.Printf("%d bytes, UDP port %d\n", len(data), binary.BigEndian.Uint16(data[36:]))
	}
	xsk.Release(bufs[:n]...)
	xsk.Close()
	if err := e.Stop(); err != nil {
		fmt.Println(err)
	}
	if err := port.Close(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 64 bytes, UDP port 4789
}
