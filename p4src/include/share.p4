/* p4mcc switch program: each port's max-min fair share (docs/stamp.md, "The share").
 *
 * On a port whose rate the controller wrote (port_rate), every departing
 * packet adds its length to its flow's slot: SHARE_SLOTS slots per port,
 * indexed by a hash of the addresses, protocol and UDP ports. A slot carries
 * the tag of the epoch it was last written in, so a new epoch needs no
 * clearing: a slot with another tag is empty. Per epoch the port counts the
 * slots in use, the heavy ones (bytes past the epoch's threshold, or a
 * stamped session's from its first packet) and the bytes of the light ones.
 *
 * When an epoch ends, the first packet of the next one turns those counts
 * into the share, (capacity - light bytes) / heavy flows, on the log scale
 * of hosts.wire.Share (eighth octaves). On that scale the division is a
 * subtraction of the log of the heavy-flow count, corrected for hash
 * collisions as linear counting does (n = -m ln(1 - k/m) flows behind k of
 * m slots in use); the two logs come from tables the controller writes
 * (controller/desired.py), the only division in the estimate. */
#ifndef P4MCC_SHARE_P4
#define P4MCC_SHARE_P4

/* floor(8 log2 x) for x >= 1 (0 for x = 0): the eighth-octave of x. The
 * leading one's position gives whole octaves; the bits below it, compared
 * with 2^31 (2^(k/8) - 1) rounded up, the eighths. */
control Log8(in bit<32> x, out bit<16> c) {
    apply {
        bit<32> m = x;
        bit<16> lz = 0;
        if (m[31:16] == 0) { lz = lz + 16; m = m << 16; }
        if (m[31:24] == 0) { lz = lz + 8;  m = m << 8; }
        if (m[31:28] == 0) { lz = lz + 4;  m = m << 4; }
        if (m[31:30] == 0) { lz = lz + 2;  m = m << 2; }
        if (m[31:31] == 0) { lz = lz + 1;  m = m << 1; }
        bit<32> f = m & 0x7fffffff;
        bit<16> k = 0;
        if      (f >= 1791018728) { k = 7; }
        else if (f >= 1464138955) { k = 6; }
        else if (f >= 1164388882) { k = 5; }
        else if (f >= 889516852)  { k = 4; }
        else if (f >= 637458090)  { k = 3; }
        else if (f >= 406319186)  { k = 2; }
        else if (f >= 194363876)  { k = 1; }
        if (x == 0) {
            c = 0;
        } else {
            c = ((31 - lz) << 3) + k;
        }
    }
}

control ShareEstimate(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t sm) {

    Log8() log8;

    bit<16> log_heavy = 0;      /* 8 log2 max(h, 1), rounded */
    bit<16> log_heavy_more = 0; /* 8 log2 (h + 1), rounded */
    bit<16> log_spread = 0;     /* 8 log2 (n / k), rounded: linear counting */

    action set_heavy_log(bit<16> log_n, bit<16> log_n1) {
        log_heavy = log_n;
        log_heavy_more = log_n1;
    }

    /* Heavy slots h -> eighth-octaves of h (at least 1) and of h + 1. */
    table share_heavy_log {
        key = { meta.share_h: exact @name("heavy"); }
        actions = { set_heavy_log; @defaultonly NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action set_spread(bit<16> log_ratio) {
        log_spread = log_ratio;
    }

    /* Slots in use k -> eighth-octaves of the flows they hold per slot. */
    table share_collisions {
        key = { meta.share_k: exact @name("flows"); }
        actions = { set_spread; @defaultonly NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        bit<32> port = (bit<32>)sm.egress_port;
        bit<48> t = sm.egress_global_timestamp;
        bit<48> epoch = STAMP_WINDOW_US << meta.epoch_shift;
        bit<48> start;
        bit<16> tag;
        bit<16> k;
        bit<16> h;
        bit<32> light;
        bit<32> thr;
        share_epoch_start.read(start, port);
        share_epoch_tag.read(tag, port);
        share_flows.read(k, port);
        share_heavy.read(h, port);
        share_light.read(light, port);
        share_threshold.read(thr, port);

        bit<48> age = t - start;
        if (tag == 0 || age >= epoch) {
            /* The epoch [start, start + epoch) ended. Its counts stand for
             * the last complete epoch unless a whole epoch went by idle. */
            if (tag == 0 || age >= epoch + epoch) {
                k = 0;
                h = 0;
                light = 0;
                start = t;
            } else {
                start = start + epoch;
            }
            meta.share_k = k;
            meta.share_h = h;
            share_heavy_log.apply();
            share_collisions.apply();
            bit<32> capacity = meta.port_rate_units << (7 + meta.epoch_shift);
            bit<32> avail = 1;
            if (capacity > light) {
                avail = capacity - light;
            }
            bit<16> lc;
            log8.apply(avail, lc);
            /* Eighth-octaves of the share in bytes per epoch. */
            bit<16> per_flow = 0;
            if (lc > log_heavy + log_spread) {
                per_flow = lc - (log_heavy + log_spread);
            }
            bit<16> per_new = 0;
            if (lc > log_heavy_more + log_spread) {
                per_new = lc - (log_heavy_more + log_spread);
            }
            /* In 40 kb/s * 2^((c - 56)/8): bytes per 25.6 ms window. */
            bit<16> down = (bit<16>)meta.epoch_shift << 3;
            bit<8> code = 1;
            if (per_flow > down) {
                code = (bit<8>)(per_flow - down);
            }
            bit<8> code_new = 1;
            if (per_new > down) {
                code_new = (bit<8>)(per_new - down);
            }
            /* Heavy from half the share down to a quarter of it. */
            thr = 0;
            if (per_flow >= 8) {
                thr = (32w1 << (bit<8>)(per_flow >> 3)) >> 1;
            }
            share_last_flows.write(port, k);
            share_last_heavy.write(port, h);
            share_last_light.write(port, light);
            share_code.write(port, code);
            share_code_new.write(port, code_new);
            share_threshold.write(port, thr);
            share_epoch_start.write(port, start);
            tag = tag + 1;
            if (tag == 0) {
                tag = 1;
            }
            share_epoch_tag.write(port, tag);
            k = 0;
            h = 0;
            light = 0;
        }

        /* This packet's flow: addresses, protocol and UDP ports (others:
         * the addresses and protocol alone; non-IPv4: one flow of zeros).
         * A p4mcc message's flow is its source and session: a session that
         * spreads its data over several groups (WEBRC's waves) is one flow. */
        bit<32> src = 0;
        bit<32> dst = 0;
        bit<8> proto = 0;
        bit<16> sport = 0;
        bit<16> dport = 0;
        if (hdr.ipv4.isValid()) {
            src = hdr.ipv4.src_addr;
            dst = hdr.ipv4.dst_addr;
            proto = hdr.ipv4.protocol;
        }
        if (hdr.mcc.isValid()) {
            dst = hdr.mcc.session_id;
        } else if (hdr.udp.isValid()) {
            sport = hdr.udp.src_port;
            dport = hdr.udp.dst_port;
        }
        bit<32> slot_idx;
        hash(slot_idx, HashAlgorithm.crc32, 32w0, { src, dst, proto, sport, dport }, (bit<32>)SHARE_SLOTS);
        bit<32> idx = port * SHARE_SLOTS + slot_idx;
        bit<64> slot;
        share_slots.read(slot, idx);
        bit<16> prev = tag - 1;
        if (tag == 1) {
            prev = 0xffff;
        }
        bit<1> heavy = slot[47:47];
        bit<1> was_heavy = slot[46:46];
        bit<32> bytes = slot[31:0];
        if (slot[63:48] != tag) {
            if (slot[63:48] != prev) {
                heavy = 0;
            }
            was_heavy = heavy;
            heavy = 0;
            bytes = 0;
            k = k + 1;
        }
        bit<32> total = bytes + sm.packet_length;
        if (heavy == 0) {
            if (meta.stamp_on == 1 || total >= thr) {
                heavy = 1;
                h = h + 1;
                light = light - bytes;
            } else {
                light = light + sm.packet_length;
            }
        }
        share_slots.write(idx, tag ++ heavy ++ was_heavy ++ 14w0 ++ total);
        share_flows.write(port, k);
        share_heavy.write(port, h);
        share_light.write(port, light);

        if (was_heavy == 1) {
            share_code.read(meta.share, port);
        } else {
            share_code_new.read(meta.share, port);
        }
    }
}

#endif
