package maps

import "syscall"

func notYet(spec Spec) (Map, error) {
	return nil, mapErr(spec.Name, syscall.EOPNOTSUPP, "map type %v is not implemented yet", spec.Type)
}

func newDevMap(spec Spec) (Map, error)     { return notYet(spec) }
func newDevMapHash(spec Spec) (Map, error) { return notYet(spec) }
func newCPUMap(spec Spec) (Map, error)     { return notYet(spec) }
func newXSKMap(spec Spec) (Map, error)     { return notYet(spec) }
func newProgArray(spec Spec) (Map, error)  { return notYet(spec) }
func newRingBuf(spec Spec) (Map, error)    { return notYet(spec) }
