// SPDX-License-Identifier: MIT
/* bpf_for_each_map_elem over an array and a hash: the callback adds each
 * value to a sum, bumps the value, and stops at the key the frame names
 * (array only: a hash's order is the kernel's bucket order). The frame gets
 * the helper's return value and the sum. Test input for
 * TestForEachMapElemMatchesKernel. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 8);
} arr SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 8);
} hash SEC(".maps");

struct ctx {
	__u64 sum;
	__u32 stop;
};

static long visit(void *map, __u32 *key, __u64 *val, struct ctx *c)
{
	c->sum += *val;
	*val += 1;
	return *key == c->stop;
}

static __always_inline int each(struct xdp_md *xdp, void *map)
{
	void *data = (void *)(long)xdp->data;
	void *data_end = (void *)(long)xdp->data_end;
	__u64 *out = data;

	if (data + 24 > data_end)
		return XDP_PASS;
	struct ctx c = {.stop = *(__u32 *)data};
	long n = bpf_for_each_map_elem(map, visit, &c, 0);
	out[1] = n;
	out[2] = c.sum;
	return XDP_PASS;
}

SEC("xdp")
int each_array(struct xdp_md *xdp) { return each(xdp, &arr); }

SEC("xdp")
int each_hash(struct xdp_md *xdp) { return each(xdp, &hash); }

char _license[] SEC("license") = "GPL";
