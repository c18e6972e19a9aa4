//! The hardening tier: the agent attacked the way the most demanding users of containerd,
//! kubelet, etcd and SPDK attack theirs (issue 23), each attack bounded in time and count,
//! on loopback or Unix sockets only, each test asserting the bound or the refusal rather
//! than a timing. Memory figures under attack are printed by benchmarks, not asserted here.

mod storage;
