package bpf

// The test programs under testdata are C compiled with clang; the objects are
// committed so tests need no compiler. Rebuild them with `go generate`.
//go:generate clang -target bpf -O2 -g -mcpu=v3 -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu -c testdata/parse.c -o testdata/parse.o
//go:generate clang -target bpf -O2 -g -mcpu=v3 -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu -c testdata/features.c -o testdata/features.o
//go:generate clang -target bpf -O2 -g -mcpu=v3 -I/usr/include/x86_64-linux-gnu -I/usr/include/aarch64-linux-gnu -c testdata/foreach.c -o testdata/foreach.o
