package vfiouser

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Command is a vfio-user message command (vfio-user.rst, "Commands").
type Command uint16

// Commands of protocol version 0.1.
const (
	CmdVersion          Command = 1
	CmdDMAMap           Command = 2
	CmdDMAUnmap         Command = 3
	CmdDeviceGetInfo    Command = 4
	CmdRegionInfo       Command = 5
	CmdRegionIOFDs      Command = 6
	CmdIRQInfo          Command = 7
	CmdSetIRQs          Command = 8
	CmdRegionRead       Command = 9
	CmdRegionWrite      Command = 10
	CmdDMARead          Command = 11
	CmdDMAWrite         Command = 12
	CmdDeviceReset      Command = 13
	CmdRegionWriteMulti Command = 15
	CmdDeviceFeature    Command = 16
	CmdMigDataRead      Command = 17
	CmdMigDataWrite     Command = 18
)

var cmdNames = map[Command]string{
	CmdVersion: "VERSION", CmdDMAMap: "DMA_MAP", CmdDMAUnmap: "DMA_UNMAP",
	CmdDeviceGetInfo: "DEVICE_GET_INFO", CmdRegionInfo: "DEVICE_GET_REGION_INFO",
	CmdRegionIOFDs: "DEVICE_GET_REGION_IO_FDS", CmdIRQInfo: "DEVICE_GET_IRQ_INFO",
	CmdSetIRQs: "DEVICE_SET_IRQS", CmdRegionRead: "REGION_READ", CmdRegionWrite: "REGION_WRITE",
	CmdDMARead: "DMA_READ", CmdDMAWrite: "DMA_WRITE", CmdDeviceReset: "DEVICE_RESET",
	CmdRegionWriteMulti: "REGION_WRITE_MULTI", CmdDeviceFeature: "DEVICE_FEATURE",
	CmdMigDataRead: "MIG_DATA_READ", CmdMigDataWrite: "MIG_DATA_WRITE",
}

func (c Command) String() string {
	if n, ok := cmdNames[c]; ok {
		return n
	}
	return fmt.Sprintf("Command(%d)", uint16(c))
}

// Header flags (vfio-user.rst, "Header"): bits 0-3 the type, bit 4 No_reply,
// bit 5 Error.
const (
	FlagTypeMask uint32 = 0xF
	FlagRequest  uint32 = 0x0
	FlagReply    uint32 = 0x1
	FlagNoReply  uint32 = 1 << 4
	FlagError    uint32 = 1 << 5
)

// HeaderSize is the size of the header every message starts with.
//
//	0  u16 message ID   (echoed in the reply)
//	2  u16 command
//	4  u32 message size (header included)
//	8  u32 flags
//	12 u32 error        (an errno, in replies with FlagError)
const HeaderSize = 16

// Header is a decoded message header. All fields are in host byte order on the
// wire; xnic runs on little-endian hosts (amd64, arm64) only.
type Header struct {
	ID      uint16
	Command Command
	Size    uint32
	Flags   uint32
	Error   uint32
}

// IsReply reports whether the header is a reply's.
func (h Header) IsReply() bool { return h.Flags&FlagTypeMask == FlagReply }

// ErrMessage is wrapped by every error about a malformed message.
var ErrMessage = errors.New("vfiouser: malformed message")

// ParseHeader decodes the 16-byte header at the start of b and checks what can
// be checked without the payload: the size covers the header and stays within
// maxSize, and the type is a command or a reply.
func ParseHeader(b []byte, maxSize uint32) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes, a header has %d", ErrMessage, len(b), HeaderSize)
	}
	le := binary.LittleEndian
	h := Header{
		ID: le.Uint16(b[0:]), Command: Command(le.Uint16(b[2:])),
		Size: le.Uint32(b[4:]), Flags: le.Uint32(b[8:]), Error: le.Uint32(b[12:]),
	}
	t := h.Flags & FlagTypeMask
	switch {
	case h.Size < HeaderSize:
		return h, fmt.Errorf("%w: %s id %d: size %d is smaller than the header", ErrMessage, h.Command, h.ID, h.Size)
	case h.Size > maxSize:
		return h, fmt.Errorf("%w: %s id %d: size %d exceeds the %d-byte limit", ErrMessage, h.Command, h.ID, h.Size, maxSize)
	case t != FlagRequest && t != FlagReply:
		return h, fmt.Errorf("%w: %s id %d: message type %d is neither command nor reply", ErrMessage, h.Command, h.ID, t)
	}
	return h, nil
}

// PutHeader encodes h into the first 16 bytes of b.
func PutHeader(b []byte, h Header) {
	le := binary.LittleEndian
	le.PutUint16(b[0:], h.ID)
	le.PutUint16(b[2:], uint16(h.Command))
	le.PutUint32(b[4:], h.Size)
	le.PutUint32(b[8:], h.Flags)
	le.PutUint32(b[12:], h.Error)
}

// Region and IRQ indexes of a PCI device (linux/vfio.h, VFIO_PCI_*_INDEX).
const (
	RegionBAR0   = 0
	RegionROM    = 6
	RegionConfig = 7
	RegionVGA    = 8
	NumRegions   = 9

	IRQIntx   = 0
	IRQMSI    = 1
	IRQMSIX   = 2
	IRQErr    = 3
	IRQReq    = 4
	NumIRQIdx = 5
)

// Flags of DEVICE_GET_INFO, DEVICE_GET_REGION_INFO, DEVICE_GET_IRQ_INFO,
// DEVICE_SET_IRQS and DMA_MAP (linux/vfio.h and vfio-user.rst).
const (
	DeviceFlagReset uint32 = 1 << 0
	DeviceFlagPCI   uint32 = 1 << 1

	RegionFlagRead  uint32 = 1 << 0
	RegionFlagWrite uint32 = 1 << 1
	RegionFlagMmap  uint32 = 1 << 2
	RegionFlagCaps  uint32 = 1 << 3

	IRQInfoEventfd    uint32 = 1 << 0
	IRQInfoMaskable   uint32 = 1 << 1
	IRQInfoAutomasked uint32 = 1 << 2
	IRQInfoNoResize   uint32 = 1 << 3

	IRQSetDataNone      uint32 = 1 << 0
	IRQSetDataBool      uint32 = 1 << 1
	IRQSetDataEventfd   uint32 = 1 << 2
	IRQSetActionMask    uint32 = 1 << 3
	IRQSetActionUnmask  uint32 = 1 << 4
	IRQSetActionTrigger uint32 = 1 << 5
	irqSetDataMask             = IRQSetDataNone | IRQSetDataBool | IRQSetDataEventfd
	irqSetActionMask           = IRQSetActionMask | IRQSetActionUnmask | IRQSetActionTrigger

	DMAFlagRead  uint32 = 1 << 0
	DMAFlagWrite uint32 = 1 << 1

	// DMAUnmapFlagAll unmaps every range (linux/vfio.h
	// VFIO_DMA_UNMAP_FLAG_ALL; QEMU's vfio-user container sends it with
	// address and size 0).
	DMAUnmapFlagAll uint32 = 1 << 1
)

// Fixed payload sizes (after the header).
const (
	versionFixed    = 4  // major, minor; JSON follows
	dmaMapSize      = 32 // argsz, flags, offset, address, size
	dmaUnmapSize    = 24 // argsz, flags, address, size
	deviceInfoSize  = 16 // argsz, flags, num_regions, num_irqs
	regionInfoSize  = 32 // argsz, flags, index, cap_offset, size, offset
	irqInfoSize     = 16 // argsz, flags, index, count
	irqSetFixed     = 20 // argsz, flags, index, start, count; data follows
	regionRWFixed   = 16 // offset, region, count; data follows
	dmaRWFixed      = 16 // address, count; data follows
	writeMultiEntry = 24 // offset, region, count, 8 bytes of data
)

// Request is one decoded client command. Payload aliases the buffer it was
// parsed from; Fds are the descriptors that came with it, owned by whoever
// consumes the request (the server closes every one it does not keep).
type Request struct {
	Header
	Payload []byte
	Fds     []int
}

// payloadAt checks that the payload holds at least n bytes for cmd.
func (r *Request) need(n int) error {
	if len(r.Payload) < n {
		return fmt.Errorf("%w: %s id %d: %d-byte payload, want at least %d", ErrMessage, r.Command, r.ID, len(r.Payload), n)
	}
	return nil
}

// DMAMap is a DMA_MAP request.
type DMAMap struct {
	Flags   uint32
	Offset  uint64 // file offset of the range in the passed descriptor
	Address uint64 // IOVA (guest physical address without a vIOMMU)
	Size    uint64
}

// ParseDMAMap decodes a DMA_MAP payload.
func ParseDMAMap(r *Request) (DMAMap, error) {
	if err := r.need(dmaMapSize); err != nil {
		return DMAMap{}, err
	}
	le := binary.LittleEndian
	p := r.Payload
	m := DMAMap{Flags: le.Uint32(p[4:]), Offset: le.Uint64(p[8:]), Address: le.Uint64(p[16:]), Size: le.Uint64(p[24:])}
	switch {
	case m.Size == 0:
		return m, fmt.Errorf("%w: DMA_MAP of 0 bytes at 0x%x", ErrMessage, m.Address)
	case m.Address+m.Size < m.Address:
		return m, fmt.Errorf("%w: DMA_MAP of 0x%x bytes at 0x%x wraps the address space", ErrMessage, m.Size, m.Address)
	case m.Flags&^(DMAFlagRead|DMAFlagWrite) != 0:
		return m, fmt.Errorf("%w: DMA_MAP flags 0x%x: unknown bits", ErrMessage, m.Flags)
	}
	return m, nil
}

// DMAUnmap is a DMA_UNMAP request.
type DMAUnmap struct {
	Flags   uint32
	Address uint64
	Size    uint64
}

// ParseDMAUnmap decodes a DMA_UNMAP payload.
func ParseDMAUnmap(r *Request) (DMAUnmap, error) {
	if err := r.need(dmaUnmapSize); err != nil {
		return DMAUnmap{}, err
	}
	le := binary.LittleEndian
	p := r.Payload
	u := DMAUnmap{Flags: le.Uint32(p[4:]), Address: le.Uint64(p[8:]), Size: le.Uint64(p[16:])}
	switch {
	case u.Flags == DMAUnmapFlagAll && (u.Address != 0 || u.Size != 0):
		return u, fmt.Errorf("%w: DMA_UNMAP of all ranges with address 0x%x size 0x%x: want both 0", ErrMessage, u.Address, u.Size)
	case u.Flags == DMAUnmapFlagAll:
	case u.Flags != 0:
		return u, fmt.Errorf("%w: DMA_UNMAP flags 0x%x: only unmap-all (0x%x) is supported (no dirty bitmap)", ErrMessage, u.Flags, DMAUnmapFlagAll)
	case u.Size == 0 || u.Address+(u.Size-1) < u.Address: // may end at 2^64 (QEMU's vIOMMU does)
		return u, fmt.Errorf("%w: DMA_UNMAP of 0x%x bytes at 0x%x", ErrMessage, u.Size, u.Address)
	}
	return u, nil
}

// RegionRW is a REGION_READ or REGION_WRITE request; Data is the bytes to
// write (empty for a read).
type RegionRW struct {
	Offset uint64
	Region uint32
	Count  uint32
	Data   []byte
}

// ParseRegionRW decodes a REGION_READ or REGION_WRITE payload; a write must
// carry exactly count bytes.
func ParseRegionRW(r *Request) (RegionRW, error) {
	if err := r.need(regionRWFixed); err != nil {
		return RegionRW{}, err
	}
	le := binary.LittleEndian
	p := r.Payload
	rw := RegionRW{Offset: le.Uint64(p[0:]), Region: le.Uint32(p[8:]), Count: le.Uint32(p[12:])}
	if r.Command == CmdRegionWrite {
		rw.Data = p[regionRWFixed:]
		if uint64(len(rw.Data)) != uint64(rw.Count) {
			return rw, fmt.Errorf("%w: REGION_WRITE of count %d carries %d bytes", ErrMessage, rw.Count, len(rw.Data))
		}
	}
	return rw, nil
}

// ParseWriteMulti decodes a REGION_WRITE_MULTI payload into its writes.
func ParseWriteMulti(r *Request) ([]RegionRW, error) {
	if err := r.need(8); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint64(r.Payload)
	rest := r.Payload[8:]
	if n > uint64(len(rest)/writeMultiEntry) || uint64(len(rest)) != n*writeMultiEntry {
		return nil, fmt.Errorf("%w: REGION_WRITE_MULTI of %d writes in %d bytes", ErrMessage, n, len(rest))
	}
	le := binary.LittleEndian
	out := make([]RegionRW, n)
	for i := range out {
		e := rest[i*writeMultiEntry:]
		w := RegionRW{Offset: le.Uint64(e[0:]), Region: le.Uint32(e[8:]), Count: le.Uint32(e[12:])}
		if w.Count > 8 {
			return nil, fmt.Errorf("%w: REGION_WRITE_MULTI write %d of %d bytes (at most 8)", ErrMessage, i, w.Count)
		}
		w.Data = e[16 : 16+w.Count]
		out[i] = w
	}
	return out, nil
}

// IRQSet is a DEVICE_SET_IRQS request.
type IRQSet struct {
	Flags uint32
	Index uint32
	Start uint32
	Count uint32
	Bools []byte // with IRQSetDataBool: one byte per sub-index
}

// ParseIRQSet decodes a DEVICE_SET_IRQS payload and checks that exactly one
// data flag and one action flag are set.
func ParseIRQSet(r *Request) (IRQSet, error) {
	if err := r.need(irqSetFixed); err != nil {
		return IRQSet{}, err
	}
	le := binary.LittleEndian
	p := r.Payload
	s := IRQSet{Flags: le.Uint32(p[4:]), Index: le.Uint32(p[8:]), Start: le.Uint32(p[12:]), Count: le.Uint32(p[16:])}
	data, action := s.Flags&irqSetDataMask, s.Flags&irqSetActionMask
	switch {
	case s.Flags&^(irqSetDataMask|irqSetActionMask) != 0:
		return s, fmt.Errorf("%w: SET_IRQS flags 0x%x: unknown bits", ErrMessage, s.Flags)
	case data == 0 || data&(data-1) != 0:
		return s, fmt.Errorf("%w: SET_IRQS flags 0x%x: want exactly one DATA flag", ErrMessage, s.Flags)
	case action == 0 || action&(action-1) != 0:
		return s, fmt.Errorf("%w: SET_IRQS flags 0x%x: want exactly one ACTION flag", ErrMessage, s.Flags)
	case uint64(s.Start)+uint64(s.Count) > 1<<16:
		return s, fmt.Errorf("%w: SET_IRQS sub-indexes [%d, +%d) out of range", ErrMessage, s.Start, s.Count)
	}
	if data == IRQSetDataBool {
		b := p[irqSetFixed:]
		if uint64(len(b)) < uint64(s.Count) {
			return s, fmt.Errorf("%w: SET_IRQS with %d booleans for count %d", ErrMessage, len(b), s.Count)
		}
		s.Bools = b[:s.Count]
	}
	return s, nil
}

// Index decodes the u32 index at payload offset 8 of DEVICE_GET_REGION_INFO and
// DEVICE_GET_IRQ_INFO, with the argsz at offset 0.
func parseIndexed(r *Request, size int) (argsz, index uint32, err error) {
	if err := r.need(size); err != nil {
		return 0, 0, err
	}
	le := binary.LittleEndian
	return le.Uint32(r.Payload[0:]), le.Uint32(r.Payload[8:]), nil
}

// Version is a VERSION request or reply: major, minor and the JSON capabilities.
type Version struct {
	Major, Minor uint16
	JSON         []byte // without the terminating NUL; may be empty
}

// ParseVersion decodes a VERSION payload.
func ParseVersion(r *Request) (Version, error) {
	if err := r.need(versionFixed); err != nil {
		return Version{}, err
	}
	le := binary.LittleEndian
	v := Version{Major: le.Uint16(r.Payload[0:]), Minor: le.Uint16(r.Payload[2:])}
	js := r.Payload[versionFixed:]
	for len(js) > 0 && js[len(js)-1] == 0 {
		js = js[:len(js)-1]
	}
	v.JSON = js
	return v, nil
}
