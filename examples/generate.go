package examples

// Rebuild every object from its C source: `make generate` (go generate ./...)
// with clang on PATH. The flags are the same for all; the -I names where
// Debian keeps <asm/types.h>. TestObjectsMatchSources recompiles with these
// exact lines and fails when a committed object no longer matches its source.

//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_drop_count.c -o xdp/xdp_drop_count.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_macswap_tx.c -o xdp/xdp_macswap_tx.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_redirect_map.c -o xdp/xdp_redirect_map.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_redirect_cpu.c -o xdp/xdp_redirect_cpu.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_adjust_tail.c -o xdp/xdp_adjust_tail.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_vlan.c -o xdp/xdp_vlan.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_ipip.c -o xdp/xdp_ipip.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_lpm_acl.c -o xdp/xdp_lpm_acl.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_lru_flows.c -o xdp/xdp_lru_flows.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_tailcall.c -o xdp/xdp_tailcall.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_globals.c -o xdp/xdp_globals.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_xsk.c -o xdp/xdp_xsk.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_reference.c -o xdp/xdp_reference.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_meta.c -o xdp/xdp_meta.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_events.c -o xdp/xdp_events.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_fib_router.c -o xdp/xdp_fib_router.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_perf_sample.c -o xdp/xdp_perf_sample.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_mapinmap_acl.c -o xdp/xdp_mapinmap_acl.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_spinlock_stats.c -o xdp/xdp_spinlock_stats.o
//go:generate clang -O2 -g -Wall -Werror -target bpf -I/usr/include/x86_64-linux-gnu -c xdp/xdp_hw_meta.c -o xdp/xdp_hw_meta.o
