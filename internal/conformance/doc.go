// Package conformance holds the driver-independent test suite that every
// driver family and model variant must pass, written once: the closed-port
// contract, ownership refusals, frames both ways byte for byte with every
// buffer back in its pool, and a clean fault log from the model. A new family
// or variant joins by adding a row to the table in its tests; the family's own
// package keeps only what is particular to it.
//
// It has no non-test code: the suite imports every driver and its model,
// which no library package may do (a model never imports its driver).
package conformance
