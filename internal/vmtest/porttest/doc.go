// Package porttest holds the steps every driver's VM tests take on a port
// opened on a real device (a model served over vfio-user in the VM tier, or
// hardware): the traffic client on the port's queue 0, answered by the peer
// at the other end of the link (Connect), and the close and reopen of a port
// on the same device with frames checked by the peer in each round
// (CloseReopen), and a receiver blocked on RX queue 0's interrupt woken by a
// frame the peer sends later (PeerWakesRecv). It knows no driver: the tests hand it a nic.Port or a
// function that opens one.
package porttest
