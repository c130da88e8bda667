package maps_test

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/xnic-dev/xnic/dataplane/maps"
)

func Example() {
	acl, err := maps.New(maps.Spec{Name: "acl", Type: ebpf.LPMTrie, KeySize: 8, ValueSize: 4, MaxEntries: 16, Flags: maps.FlagNoPrealloc})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, arg := range []string{"acl:10.0.0.0/8=1", "acl:10.1.0.0/16=2"} {
		_, kv, _ := maps.SplitMapArg(arg)
		k, v, err := maps.ParseKV(acl.Spec(), kv)
		if err == nil {
			err = acl.Update(k, v, maps.UpdateNoExist, 0)
		}
		if err != nil {
			fmt.Println(err)
		}
	}
	k, _, _ := maps.ParseKV(acl.Spec(), "10.1.2.3/32=0")
	fmt.Printf("10.1.2.3 -> %x\n", acl.Lookup(k, 0))
	for key, val := range maps.All(acl) {
		fmt.Printf("key %x value %x\n", key, val)
	}
	// Output:
	// 10.1.2.3 -> 02000000
	// key 100000000a010000 value 02000000
	// key 080000000a000000 value 01000000
}
