"""A local address that is not loopback, for tests of what other hosts are told."""

from __future__ import annotations

import ipaddress
import socket

import pytest


def non_loopback_ip() -> str:
    """This host's address on its default route (a peer connecting from it is, to
    the daemon, another machine); the test is skipped on a host with none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: a route is looked up, nothing is sent
            ip = s.getsockname()[0]
        except OSError:
            ip = "127.0.0.1"
    if ipaddress.ip_address(ip).is_loopback or ip == "0.0.0.0":
        pytest.skip("this host has no address other than loopback")
    return ip
