package dataplane

import (
	"github.com/xnic-dev/xnic/dataplane/bpf"
	"github.com/xnic-dev/xnic/dma"
	"github.com/xnic-dev/xnic/nic"
)

// RxMetaProgram is a Program that says whether it reads the RX metadata
// (bpf.Frame.Meta, for the XDP metadata kfuncs). Poll goroutines fill it for
// such programs only; a Program that does not implement it gets none, and
// its kfuncs, if any, answer -EOPNOTSUPP.
type RxMetaProgram interface {
	Program
	UsesRxMeta() bool
}

// rxMetaCaps converts a port's capabilities to the interpreter's bits.
func rxMetaCaps(c nic.RxMetaCaps) bpf.RxMetaCaps {
	var out bpf.RxMetaCaps
	if c&nic.RxMetaTimestamp != 0 {
		out |= bpf.RxMetaTimestamp
	}
	if c&nic.RxMetaHash != 0 {
		out |= bpf.RxMetaHash
	}
	if c&nic.RxMetaVLAN != 0 {
		out |= bpf.RxMetaVLAN
	}
	return out
}

// initRxMeta gives each frame of the burst its RxMeta when the program
// reads it and the port reports any (a port that is no nic.RxMetaPort, or
// reports nothing, leaves Meta nil: every kfunc -EOPNOTSUPP). Run once, by
// newPoller; the metas belong to the poll goroutine.
func (p *poller) initRxMeta(prog Program, port nic.Port) {
	mp, ok := prog.(RxMetaProgram)
	if !ok || !mp.UsesRxMeta() {
		return
	}
	rp, ok := port.(nic.RxMetaPort)
	if !ok {
		return
	}
	caps := rxMetaCaps(rp.RxMeta())
	if caps == 0 {
		return
	}
	p.metas = make([]bpf.RxMeta, len(p.frames))
	for i := range p.frames {
		p.metas[i].Caps = caps
		p.frames[i].Meta = &p.metas[i]
	}
}

// fillRxMeta copies what the driver reported with each received buffer into
// its frame's RxMeta (only when initRxMeta set them up).
func (p *poller) fillRxMeta(bufs []*dma.Buf) {
	for i, b := range bufs {
		m := &p.metas[i]
		m.Have = 0
		if b.Flags&dma.FlagTimestamp != 0 {
			m.Have |= bpf.RxMetaTimestamp
			m.Timestamp = b.Timestamp
		}
		if b.Flags&dma.FlagRSSValid != 0 {
			m.Have |= bpf.RxMetaHash
			m.Hash, m.HashType = b.RSSHash, b.HashType
		}
		if b.Flags&dma.FlagVLAN != 0 {
			m.Have |= bpf.RxMetaVLAN
			m.VLANProto, m.VLANTCI = b.VLANProto, b.VLANTCI
		}
	}
}
