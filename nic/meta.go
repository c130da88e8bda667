package nic

// RxMetaCaps says which per-frame RX metadata a port's driver reports in the
// dma.Buf fields (Timestamp, RSSHash/HashType, VLANProto/VLANTCI): what the
// kernel's xdp_metadata_ops give the XDP metadata kfuncs. A kfunc for
// metadata the port does not report returns -EOPNOTSUPP; one for metadata
// this frame lacks (no timestamp taken) returns -ENODATA.
type RxMetaCaps uint8

// The metadata a driver may report.
const (
	RxMetaTimestamp RxMetaCaps = 1 << iota // bpf_xdp_metadata_rx_timestamp
	RxMetaHash                             // bpf_xdp_metadata_rx_hash
	RxMetaVLAN                             // bpf_xdp_metadata_rx_vlan_tag
)

// RxMetaPort is a Port whose driver reports RX metadata.
type RxMetaPort interface {
	RxMeta() RxMetaCaps
}

// PHC is a port's IEEE 1588 hardware clock, the clock its RX and TX
// timestamps are taken from (as the kernel's ptp_clock_info).
type PHC interface {
	// Time reads the clock, in nanoseconds.
	Time() (int64, error)
	// SetTime sets the clock.
	SetTime(ns int64) error
	// AdjTime steps the clock by delta nanoseconds.
	AdjTime(delta int64) error
	// AdjFreq runs the clock ppb parts per billion fast (negative: slow),
	// replacing the previous adjustment.
	AdjFreq(ppb int64) error
}

// PHCPort is a Port with a hardware clock.
type PHCPort interface {
	PHC() (PHC, error)
}

// RingSizer is a Port that reports its ring sizes (ethtool -g): descriptors
// per RX and TX ring, and the most a ring may have.
type RingSizer interface {
	RingSizes() (rx, tx, max int)
}
