//go:build linux && (amd64 || arm64)

package bpf

import "unsafe"

// What the native metadata kfuncs (jit_meta.go) read: the Frame's Meta
// pointer and the RxMeta fields behind it.
var (
	offFrameMeta     = int32(unsafe.Offsetof(Frame{}.Meta))
	offMetaCaps      = int32(unsafe.Offsetof(RxMeta{}.Caps))
	offMetaHave      = int32(unsafe.Offsetof(RxMeta{}.Have))
	offMetaTimestamp = int32(unsafe.Offsetof(RxMeta{}.Timestamp))
	offMetaHash      = int32(unsafe.Offsetof(RxMeta{}.Hash))
	offMetaHashType  = int32(unsafe.Offsetof(RxMeta{}.HashType))
	offMetaVLANProto = int32(unsafe.Offsetof(RxMeta{}.VLANProto))
	offMetaVLANTCI   = int32(unsafe.Offsetof(RxMeta{}.VLANTCI))
)
