#!/usr/bin/env python3
"""An independent gRPC client for dpu-agent that knows nothing but the server address.

It discovers the services through gRPC server reflection (grpcio-reflection), builds the
message classes from the descriptors the server sends, calls dpu.v1.Inventory/GetSystem
and the standard health check, and prints what it found. Used by the mocked test tier to
prove standard gRPC tooling works without the .proto files.

Usage: reflection_client.py unix:/path/to/agent.sock | HOST:PORT
"""

import sys

import grpc
from google.protobuf import descriptor_pool, message_factory
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)


def message_class(pool, full_name):
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name))


def main(target):
    # Default channel options on purpose: for unix: targets grpc-python sends the
    # percent-encoded socket path as :authority, which the agent must accept (its h2 is
    # patched for that, vendor/README.md). No ("grpc.default_authority", ...) needed.
    with grpc.insecure_channel(target) as channel:
        grpc.channel_ready_future(channel).result(timeout=10)
        database = ProtoReflectionDescriptorDatabase(channel)
        pool = descriptor_pool.DescriptorPool(database)

        services = sorted(database.get_services())
        for name in services:
            print(f"service {name}")

        inventory = pool.FindServiceByName("dpu.v1.Inventory")
        method = inventory.methods_by_name["GetSystem"]
        request_cls = message_class(pool, method.input_type.full_name)
        response_cls = message_class(pool, method.output_type.full_name)
        call = channel.unary_unary(
            f"/{inventory.full_name}/{method.name}",
            request_serializer=request_cls.SerializeToString,
            response_deserializer=response_cls.FromString,
        )
        system = call(request_cls(), timeout=10)
        print(f"hostname={system.hostname}")
        print(f"model={system.model}")

        health = pool.FindServiceByName("grpc.health.v1.Health")
        check = health.methods_by_name["Check"]
        check_req = message_class(pool, check.input_type.full_name)
        check_resp = message_class(pool, check.output_type.full_name)
        health_call = channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=check_req.SerializeToString,
            response_deserializer=check_resp.FromString,
        )
        reply = health_call(check_req(service=""), timeout=10)
        status_name = check_resp.DESCRIPTOR.fields_by_name["status"].enum_type.values_by_number[
            reply.status
        ].name
        print(f"health={status_name}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
