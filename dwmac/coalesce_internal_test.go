package dwmac

import "testing"

// TestIOCPlan: IOC on the descriptors of every Nth frame, both descriptors
// of a timestamped frame's pair, and on every descriptor with coalescing off.
func TestIOCPlan(t *testing.T) {
	for _, c := range []struct {
		plan iocPlan
		want string
	}{
		{iocPlan{every: 3, descs: 1}, "..I..I..I"},
		{iocPlan{every: 2, descs: 2}, "..II..II.."},
		{iocPlan{every: 1, descs: 1}, "IIII"},
		{iocPlan{}, "IIII"},
	} {
		got := make([]byte, len(c.want))
		for i := range got {
			got[i] = '.'
			if c.plan.next() {
				got[i] = 'I'
			}
		}
		if string(got) != c.want {
			t.Errorf("%+v: %s, want %s", c.plan, got, c.want)
		}
	}
}
