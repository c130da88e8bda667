// SPDX-License-Identifier: MIT
/* xdp_redirect_cpu spreads frames over the entries of the cpumap cpu_map,
 * like the kernel's samples/bpf xdp_redirect_cpu: the entry is a hash of the
 * IPv4 flow (addresses, protocol and, for TCP and UDP, ports) modulo nr_cpus;
 * anything else goes to entry 0. A missing entry falls back to XDP_PASS.
 * cpu_hits counts frames per chosen entry.
 *
 * xdp_cpumap_count is the program meant to be attached to the cpumap
 * entries (section xdp/cpumap): it runs on the target CPU, counts the frame
 * in remote_cnt and passes it on. */
#include "xdp_common.h"

#define MAX_CPUS 64

/* Number of entries to spread over; rewrite before loading. */
volatile const __u32 nr_cpus = 2;

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
	__uint(max_entries, MAX_CPUS);
} cpu_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, MAX_CPUS);
} cpu_hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} remote_cnt SEC(".maps");

static __always_inline __u32 flow_hash(void *data, void *data_end)
{
	__be16 proto;
	int off = parse_eth(data, data_end, &proto);
	if (off < 0 || proto != bpf_htons(ETH_P_IP))
		return 0;

	struct iphdr *iph = data + off;
	if ((void *)(iph + 1) > data_end)
		return 0;
	__u32 h = iph->saddr ^ iph->daddr ^ ((__u32)iph->protocol << 24);
	if (iph->protocol == IPPROTO_TCP || iph->protocol == IPPROTO_UDP) {
		/* Ports sit at the same offset in both; options are skipped. */
		__u32 *ports = (void *)iph + (iph->ihl & 0xf) * 4;
		if ((void *)(ports + 1) <= data_end && iph->ihl >= 5)
			h ^= *ports;
	}
	h ^= h >> 16;
	h *= 0x45d9f3b;
	h ^= h >> 16;
	return h;
}

SEC("xdp")
int xdp_redirect_cpu(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 n = nr_cpus;
	__u32 cpu;
	__u64 *cnt;

	if (n == 0 || n > MAX_CPUS)
		n = 1;
	cpu = flow_hash(data, data_end) % n;
	cnt = bpf_map_lookup_elem(&cpu_hits, &cpu);
	if (cnt)
		*cnt += 1;
	return bpf_redirect_map(&cpu_map, cpu, XDP_PASS);
}

SEC("xdp/cpumap")
int xdp_cpumap_count(struct xdp_md *ctx)
{
	__u32 key = 0;
	__u64 *cnt = bpf_map_lookup_elem(&remote_cnt, &key);
	if (cnt)
		*cnt += 1;
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";
