#!/usr/bin/env python3
"""A TensorBoard event-file reader written from the format's description, independent of
tinynet's writer: its own CRC-32C (bit by bit, no table) and its own protobuf decoding.

Record: uint64 length | uint32 masked crc32c(length bytes) | data | uint32 masked crc32c(data),
little-endian; mask(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 mod 2**32. Data: an Event
message: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5
(Summary: repeated value = 1 (Value: tag = 1 (string), simple_value = 2 (float))).

Usage as a program: tfevents.py FILE  -- prints one JSON object per event."""
import json
import struct
import sys


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def fields(message: bytes):
    """Yields (field number, wire type, value) for each field of a protobuf message."""
    pos = 0

    def varint():
        nonlocal pos
        shift = result = 0
        while True:
            b = message[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return result

    while pos < len(message):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            value = varint()
        elif wire == 1:
            value, pos = message[pos:pos + 8], pos + 8
        elif wire == 2:
            n = varint()
            value, pos = message[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = message[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unexpected wire type {wire} for field {number}")
        yield number, wire, value
    if pos != len(message):
        raise ValueError("message overruns its length")


def decode_event(data: bytes) -> dict:
    event = {"step": 0, "values": []}
    for number, wire, value in fields(data):
        if (number, wire) == (1, 1):
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif (number, wire) == (2, 0):
            event["step"] = value - (1 << 64) if value >= 1 << 63 else value
        elif (number, wire) == (3, 2):
            event["file_version"] = value.decode("utf-8")
        elif (number, wire) == (5, 2):
            for vnum, vwire, summary_value in fields(value):
                if (vnum, vwire) != (1, 2):
                    raise ValueError(f"Summary: unexpected field {vnum}")
                tag, simple = None, None
                for fnum, fwire, f in fields(summary_value):
                    if (fnum, fwire) == (1, 2):
                        tag = f.decode("utf-8")
                    elif (fnum, fwire) == (2, 5):
                        simple = struct.unpack("<f", f)[0]
                event["values"].append((tag, simple))
        else:
            raise ValueError(f"Event: unexpected field {number} (wire type {wire})")
    return event


def read_events(path) -> list:
    """Every event in the file, checking each record's length and both checksums."""
    data = open(path, "rb").read()
    events, pos = [], 0
    while pos < len(data):
        if len(data) - pos < 12:
            raise ValueError(f"{path}: truncated record header at byte {pos}")
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if length_crc != masked(crc32c(header)):
            raise ValueError(f"{path}: bad length checksum at byte {pos}")
        if len(data) - pos < 16 + length:
            raise ValueError(f"{path}: truncated record at byte {pos}")
        payload = data[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        if data_crc != masked(crc32c(payload)):
            raise ValueError(f"{path}: bad data checksum at byte {pos}")
        events.append(decode_event(payload))
        pos += 16 + length
    if not events or events[0].get("file_version") != "brain.Event:2":
        raise ValueError(f"{path}: the first event is not the file_version event")
    return events


if __name__ == "__main__":
    for e in read_events(sys.argv[1]):
        print(json.dumps(e))
