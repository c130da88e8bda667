package bpf

// keyHint records at the call at pc of a helper taking a map key in r2
// (bpf_map_lookup_elem, _update_elem, _delete_elem) the region the
// analysis places r2 in, as the hint of an access through r2 at pc: the
// native lookups check the key's load against that region inline
// (keyCheck in jit_amd64_hash.go), so a key in the packet, in global data
// or in a map value is checked as a load of key_size bytes there is, not
// sent to Go by a guess on the stack. A hint only picks the inline check;
// every other region still takes the full check out of line.
func (rg *ranger) keyHint(s *rangeState, pc int, id int64) {
	switch int32(id) {
	case helperMapLookupElem, helperMapUpdateElem, helperMapDeleteElem:
		rg.hint(s, pc, 2)
	}
}
