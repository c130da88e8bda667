package fec

import (
	"fmt"
	"strings"
)

// Quirks are the differences between FEC generations, named after Linux
// fec_main.c's FEC_QUIRK_* flags (the driver data of each compatible string).
type Quirks uint32

const (
	QuirkENETMAC       Quirks = 1 << iota // ENET-style MAC (i.MX28 and later): ECR/RCR layout, MIB
	QuirkGBIT                             // 1000 Mb/s capable (ECR.SPEED, RGMII)
	QuirkBufDescEx                        // enhanced 32-byte descriptors (ECR.EN1588)
	QuirkCSUM                             // checksum offload
	QuirkVLAN                             // VLAN tag reporting
	QuirkAVB                              // audio-video bridging: classification of rings 1-2
	QuirkERR006358                        // i.MX6Q: re-kick TDAR after reclaim if TDAR reads 0
	QuirkERR007885                        // write TDAR only if one of four reads returns 0
	QuirkRACC                             // receive accelerator (RACC)
	QuirkCoalesce                         // interrupt coalescing (TXIC/RXIC)
	QuirkClearSetupMII                    // write MMFR = 0 before MSCR, or MSCR raises EIR.MII
	QuirkMultiQueue                       // three RX and three TX rings; reset by ECR = 0
	QuirkEEE                              // energy-efficient Ethernet
	QuirkMDIOC45                          // clause 45 MDIO
)

var quirkNames = []string{"ENET_MAC", "HAS_GBIT", "HAS_BUFDESC_EX", "HAS_CSUM", "HAS_VLAN", "HAS_AVB",
	"ERR006358", "ERR007885", "HAS_RACC", "HAS_COALESCE", "CLEAR_SETUP_MII", "HAS_MULTI_QUEUES",
	"HAS_EEE", "HAS_MDIO_C45"}

func (q Quirks) String() string {
	var parts []string
	for i, n := range quirkNames {
		if q&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := q &^ (1<<len(quirkNames) - 1); rest != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint32(rest)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Variant is one supported FEC generation.
type Variant struct {
	Compatible string // devicetree compatible string
	Name       string // SoC family
	Quirks     Quirks
	Queues     int // RX and TX rings
}

// MultiQueue reports whether the MAC has three rings (and resets by ECR = 0).
func (v Variant) MultiQueue() bool { return v.Quirks&QuirkMultiQueue != 0 }

const (
	quirksIMX6Q  = QuirkENETMAC | QuirkGBIT | QuirkBufDescEx | QuirkCSUM | QuirkVLAN | QuirkERR006358 | QuirkRACC | QuirkClearSetupMII
	quirksIMX6SX = QuirkENETMAC | QuirkGBIT | QuirkBufDescEx | QuirkCSUM | QuirkVLAN | QuirkAVB | QuirkERR007885 |
		QuirkRACC | QuirkCoalesce | QuirkClearSetupMII | QuirkMultiQueue
	quirksIMX6UL = QuirkENETMAC | QuirkBufDescEx | QuirkCSUM | QuirkVLAN | QuirkERR007885 | QuirkRACC |
		QuirkCoalesce | QuirkClearSetupMII
	quirksIMX8MQ = quirksIMX6SX | QuirkEEE | QuirkMDIOC45
)

// variants is the compatible table (Linux fec_main.c fec_dt_ids and the
// fec_devinfo of each). i.MX8M Plus, Mini and Nano list "fsl,imx8mq-fec" as
// their fallback and use its data; they are listed by name too.
var variants = []Variant{
	{"fsl,imx8mp-fec", "i.MX8M Plus", quirksIMX8MQ, 3},
	{"fsl,imx8mm-fec", "i.MX8M Mini", quirksIMX8MQ, 3},
	{"fsl,imx8mn-fec", "i.MX8M Nano", quirksIMX8MQ, 3},
	{"fsl,imx8mq-fec", "i.MX8M Quad", quirksIMX8MQ, 3},
	{"fsl,imx8qm-fec", "i.MX8QM", quirksIMX8MQ &^ QuirkEEE, 3},
	{"fsl,imx7d-fec", "i.MX7D", quirksIMX6SX, 3},
	{"fsl,imx6sx-fec", "i.MX6SX", quirksIMX6SX, 3},
	{"fsl,imx6ul-fec", "i.MX6UL", quirksIMX6UL, 1},
	{"fsl,imx6q-fec", "i.MX6Q", quirksIMX6Q, 1},
	{"fsl,mvf600-fec", "Vybrid VF600", QuirkENETMAC | QuirkRACC | QuirkClearSetupMII, 1},
}

// LookupCompatible finds the variant of a devicetree compatible value. It takes
// one string or a whole compatible list (separated by NUL bytes or spaces, as
// /sys/.../of_node/compatible or a command line gives it); the first entry
// that matches wins.
func LookupCompatible(compatible string) (Variant, bool) {
	for _, c := range strings.FieldsFunc(compatible, func(r rune) bool { return r == 0 || r == ' ' || r == '\n' || r == '\t' }) {
		for _, v := range variants {
			if v.Compatible == c {
				return v, true
			}
		}
	}
	return Variant{}, false
}

// Variants lists every supported variant.
func Variants() []Variant { return append([]Variant(nil), variants...) }
