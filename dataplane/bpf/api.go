package bpf

import (
	"fmt"

	"github.com/xnic-dev/xnic/dataplane/maps"
)

// Action is an XDP program's verdict, as enum xdp_action.
type Action uint32

const (
	ActionAborted  Action = 0 // XDP_ABORTED: drop and count as an error
	ActionDrop     Action = 1 // XDP_DROP
	ActionPass     Action = 2 // XDP_PASS: to the host stack
	ActionTX       Action = 3 // XDP_TX: out of the port it came in on
	ActionRedirect Action = 4 // XDP_REDIRECT: see Runner.Redirect
)

func (a Action) String() string {
	switch a {
	case ActionAborted:
		return "XDP_ABORTED"
	case ActionDrop:
		return "XDP_DROP"
	case ActionPass:
		return "XDP_PASS"
	case ActionTX:
		return "XDP_TX"
	case ActionRedirect:
		return "XDP_REDIRECT"
	}
	return fmt.Sprintf("XDP_UNKNOWN(%d)", uint32(a))
}

// Frame is the XDP buffer a program runs on: the kernel's xdp_buff. Buf is the
// whole slot (headroom, frame, tailroom); the offsets index into it and move when
// the program calls adjust_head, adjust_meta or adjust_tail. DataMeta == Data
// means no metadata. Frame is reused from packet to packet: no allocation.
type Frame struct {
	Buf            []byte
	DataMeta       int
	Data           int
	DataEnd        int
	IngressIfindex uint32
	RxQueueIndex   uint32
	// Meta is what the NIC reported about the frame, for the RX metadata
	// kfuncs (kfunc.go); nil means the port reports none (every kfunc
	// returns -EOPNOTSUPP). Whoever fills it owns it: the Runner only reads
	// it. Only programs whose UsesRxMeta is true look at it.
	Meta *RxMeta
}

// RedirectKind says what a REDIRECT verdict points at.
type RedirectKind uint8

const (
	RedirectNone    RedirectKind = iota
	RedirectIfindex              // bpf_redirect(ifindex, flags)
	RedirectDevMap               // bpf_redirect_map on a devmap or devmap_hash
	RedirectCPUMap               // bpf_redirect_map on a cpumap
	RedirectXSKMap               // bpf_redirect_map on an xskmap
)

func (k RedirectKind) String() string {
	switch k {
	case RedirectNone:
		return "none"
	case RedirectIfindex:
		return "ifindex"
	case RedirectDevMap:
		return "devmap"
	case RedirectCPUMap:
		return "cpumap"
	case RedirectXSKMap:
		return "xskmap"
	}
	return fmt.Sprintf("RedirectKind(%d)", uint8(k))
}

// Redirect is where the last REDIRECT verdict sends the frame: the kernel's
// bpf_redirect_info. For RedirectIfindex, Ifindex is the target; for the map kinds,
// Map and Key name the entry (for a devmap, Ifindex is the entry's ifindex too).
type Redirect struct {
	Kind    RedirectKind
	Ifindex uint32
	Map     maps.Map
	Key     uint32
	Flags   uint64
}
