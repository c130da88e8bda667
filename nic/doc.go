// Package nic is the contract between the three layers of xnic: what a driver is
// handed (Device: register windows, DMA memory, interrupts, reset), and what a
// driver gives the dataplane (Port with RX and TX queues, link state, counters).
//
// The same driver code runs on a real device through package vfio, on a device
// model (packages igb/igbsim, dwmac/dwmacsim, fec/fecsim), and inside a VM against
// QEMU's model; only the Device differs. Drivers know nothing of XDP programs, and
// the dataplane knows nothing of registers.
//
// It also holds the helpers every driver needs in the same shape and that carry
// no register knowledge: decoded register dumps (RegDump, RegValue, Field,
// FlagFields), counters (CounterTotals for hardware totals, CounterValue,
// AppendQueueCounters, AppendPortQueueCounters, and the ring counters every
// driver reports, RingTotals from SumRings), waits with deadlines (Poll,
// PollReg, WaitLinkUp), queue and ring chores (RxQueueAt, TxQueueAt, SyncRing
// across the wrap, PutBufs back to their pools; the ring-memory checks
// AllocatorNonCoherent, UncachedAllocator and CheckBufferLines; the control
// lock and closed flag every port guards its control paths with, PortCtl;
// the end of Close, DisableIRQs and FreeQueues), and the PHY rules the families share
// (ReadPHYID and PHYIDValid for a clause-22 PHY's identifier;
// RestartAutoneg for a clause-22 PHY left powered down; clause-22
// and clause-45 access, PHYAccess; the link modes a MAC refuses, LinkModeChecker,
// with WithdrawGigabitHalf and CheckGigabitHalfWrite for 1000BASE-T half duplex,
// which none of the three runs; the RGMII TX clock per speed, RGMIITxClockHz,
// which the dwmac driver, its model and the preflight share). Package nictest has the matching test helpers.
package nic
