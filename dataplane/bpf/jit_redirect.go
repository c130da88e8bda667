package bpf

import "github.com/xnic-dev/xnic/dataplane/maps"

// The redirect record of native bpf_redirect and bpf_redirect_map
// (jit_amd64_helpers.go, jit_arm64_redirect.go) and the Redirects Go
// builds from it.

// jitRedirect is a Redirect as native code records it: numbers (a map
// number, not the map: native code writes no Go pointer, which would need a
// write barrier). The helpers write it as three 32-bit words (tag, ifindex,
// key) in the slot jitState.rdo points at: rds[0] when a run is entered
// from Go one at a time, rds[i+1] for frame i of a native burst, so that
// the burst loop copies nothing. Every field is that of the Redirect it
// stands for (none set: the empty one), so that Go converts it without a
// branch on its kind.
type jitRedirect struct {
	// kind is 0 when nothing is recorded, else rdSet|RedirectKind
	// (RedirectNone: the run's redirect is cleared, a key with no entry).
	kind  uint8
	flags uint8 // the helper's flags (rdFlagsMax at most)
	// mapNum is the map's number in the collection (mapRefs) plus one; 0
	// for none (RedirectIfindex, RedirectNone).
	mapNum uint16
	// ifindex is the target of bpf_redirect or the devmap entry's; key
	// is the map's key. Both are 0 where the kind has none.
	ifindex uint32
	key     uint32
	_       uint32 // a power of two: the slot's offset is a shift
}

const (
	// rdSet marks a record a helper wrote (jitRedirect.kind).
	rdSet = 0x80
	// rdFlagsMax is every flag bpf_redirect_map takes on any map type:
	// the flags of a recorded redirect fit in jitRedirect.flags.
	rdFlagsMax = flagsActionMask | flagBroadcast | flagExcludeIngr
	// rdMaps is the number of maps of a collection whose redirects native
	// code records (jitRedirect.mapNum); a later map's go to Go.
	rdMaps = 1<<16 - 1
)

// The byte offsets of the 32-bit words of a record the helpers store: the
// tag (kind, flags and map number: rdTag), ifindex, key.
const (
	rdOffTag     = 0
	rdOffIfindex = 4
	rdOffKey     = 8
)

// rdTag is the first word a native helper stores for a redirect of kind
// k with flags through the map numbered mapNum (jitRedirect.mapNum: 0 for
// none), as jitRedirect lays them out (little-endian).
func rdTag(k RedirectKind, flags uint64, mapNum uint32) uint32 {
	return uint32(rdSet|k) | uint32(flags&0xff)<<8 | mapNum<<16
}

// takeRedirect builds Runner.redirect from the record native code left in
// rds[0] in a run entered from Go (afterNative) and clears it.
func (r *Runner) takeRedirect() {
	rd := &r.jit.rds[0]
	fillRedirect(&r.redirect, rd, r.recordMap(rd.mapNum))
	rd.kind = 0
}

// recordMap is the map a record's mapNum names in the Runner's
// collection, nil for none.
func (r *Runner) recordMap(mapNum uint16) maps.Map {
	if mapNum == 0 || r.coll == nil || int(mapNum) > len(r.coll.mapRefs) {
		return nil
	}
	return r.coll.mapRefs[mapNum-1].m
}

// fillRedirect sets d to the Redirect the record rd stands for, its map
// being m. Field by field: a Redirect built and then copied stalls on store
// forwarding.
func fillRedirect(d *Redirect, rd *jitRedirect, m maps.Map) {
	d.Kind = RedirectKind(rd.kind &^ rdSet)
	d.Ifindex = rd.ifindex
	d.Map = m
	d.Key = rd.key
	d.Flags = uint64(rd.flags)
}
