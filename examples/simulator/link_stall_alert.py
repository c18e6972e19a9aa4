#!/usr/bin/env python3
"""Alert when a DPU link stops receiving: automation written against dpu-agent's gRPC API,
developed and tested against `dpu-sim` (docs/simulator.md), run unchanged on a BlueField.

It needs no .proto files: grpcio-reflection resolves dpu.v1.Counters from the agent. It
takes two snapshots of one netdev's counters INTERVAL seconds apart and prints

    OK    p0 rx 1234567 B in 2.0 s
    STALL p0 rx 0 B in 2.0 s

exiting 0 when the link received traffic, 1 when it did not, and 2 when the answer cannot
be trusted (the counter went missing or backwards: a reset is not a stall).

Usage: link_stall_alert.py AGENT IFNAME [INTERVAL]
  AGENT: unix:/path/to/agent.sock or HOST:PORT (plaintext; the simulator's socket)
Needs: pip install grpcio grpcio-reflection protobuf
"""

import sys
import time

import grpc
from google.protobuf import descriptor_pool, message_factory
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)


def snapshot_call(channel):
    """Counters.Snapshot as a callable, with its request class, from reflection."""
    pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
    method = pool.FindServiceByName("dpu.v1.Counters").methods_by_name["Snapshot"]
    request_cls = message_factory.GetMessageClass(method.input_type)
    response_cls = message_factory.GetMessageClass(method.output_type)
    call = channel.unary_unary(
        "/dpu.v1.Counters/Snapshot",
        request_serializer=request_cls.SerializeToString,
        response_deserializer=response_cls.FromString,
    )
    return call, request_cls


def rx_bytes(call, request_cls, ifname):
    """The netdev's rx_bytes now, or None when the agent could not read it."""
    request = request_cls()
    request.selectors.add().netdev.ifname = ifname
    reply = call(request, timeout=10)
    for sample in reply.samples:
        if sample.object == f"netdevs/{ifname}" and sample.counter == "rx_bytes":
            return sample.value
    return None


def main(agent, ifname, interval):
    with grpc.insecure_channel(agent) as channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        call, request_cls = snapshot_call(channel)
        before = rx_bytes(call, request_cls, ifname)
        started = time.monotonic()
        # On stderr, so a caller (or a test) knows the interval has begun.
        print(f"baseline {ifname} rx_bytes={before}", file=sys.stderr, flush=True)
        time.sleep(interval)
        after = rx_bytes(call, request_cls, ifname)
        elapsed = time.monotonic() - started
    if before is None or after is None:
        print(f"UNKNOWN {ifname} rx_bytes could not be read")
        return 2
    if after < before:
        print(f"UNKNOWN {ifname} rx_bytes went backwards ({before} -> {after}): reset")
        return 2
    received = after - before
    verdict = "OK   " if received > 0 else "STALL"
    print(f"{verdict} {ifname} rx {received} B in {elapsed:.1f} s")
    return 0 if received > 0 else 1


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) == 4 else 2.0))
