/* p4mcc switch program: parser, checksum controls, deparser.
 *
 * v1model does not drop a packet whose parse fails: ingress sees
 * standard_metadata.parser_error and drops and counts it. The parser uses
 * verify() for inconsistent length fields so a truncated or malformed p4mcc
 * message never reaches the feedback logic half-parsed. */
#ifndef P4MCC_PARSER_P4
#define P4MCC_PARSER_P4

/* Magic and version of a p4mcc message, as the first 3 bytes of UDP payload. */
const bit<24> MCC_MAGIC_VERSION = MCC_MAGIC ++ MCC_VERSION;

parser MccParser(packet_in pkt,
                 out headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t sm) {

    /* A UDP payload long enough for a p4mcc common header. */
    bool mcc_room = false;

    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_ARP: parse_arp;
            default: accept;
        }
    }

    state parse_arp {
        pkt.extract(hdr.arp);
        transition accept;
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.MccBadIpv4);
        verify(hdr.ipv4.ihl >= 5, error.MccBadIpv4);
        /* Only unfragmented packets (MF clear, offset 0) have a parseable
         * transport header; fragments pass as opaque IPv4. */
        transition select(hdr.ipv4.ihl, hdr.ipv4.flags, hdr.ipv4.frag_offset,
                          hdr.ipv4.protocol) {
            (5, 3w0 &&& 3w1, 0, IPPROTO_UDP): parse_udp;
            (5, 3w0 &&& 3w1, 0, IPPROTO_IGMP): parse_igmp;
            (6, 3w0 &&& 3w1, 0, IPPROTO_IGMP): parse_ipv4_option;
            default: accept;
        }
    }

    state parse_ipv4_option {
        pkt.extract(hdr.ipv4_option);
        transition parse_igmp;
    }

    state parse_igmp {
        pkt.extract(hdr.igmp);
        transition select(hdr.igmp.type) {
            IGMP_V3_REPORT: parse_igmpv3_report;
            default: accept;
        }
    }

    /* Up to four records without sources, unrolled (no parser loop). */
    state parse_igmpv3_report {
        transition select(hdr.igmp.group[15:0]) {
            0: accept;
            default: parse_rec0;
        }
    }

    state parse_rec0 {
        pkt.extract(hdr.rec0);
        transition select(hdr.rec0.aux_len, hdr.rec0.num_sources, hdr.igmp.group[15:0]) {
            (0, 0, 1): accept;
            (0, 0, _): parse_rec1;
            default: igmp_unsupported;
        }
    }

    state parse_rec1 {
        pkt.extract(hdr.rec1);
        transition select(hdr.rec1.aux_len, hdr.rec1.num_sources, hdr.igmp.group[15:0]) {
            (0, 0, 2): accept;
            (0, 0, _): parse_rec2;
            default: igmp_unsupported;
        }
    }

    state parse_rec2 {
        pkt.extract(hdr.rec2);
        transition select(hdr.rec2.aux_len, hdr.rec2.num_sources, hdr.igmp.group[15:0]) {
            (0, 0, 3): accept;
            (0, 0, _): parse_rec3;
            default: igmp_unsupported;
        }
    }

    state parse_rec3 {
        pkt.extract(hdr.rec3);
        transition select(hdr.rec3.aux_len, hdr.rec3.num_sources, hdr.igmp.group[15:0]) {
            (0, 0, 4): accept;
            default: igmp_unsupported;
        }
    }

    state igmp_unsupported {
        meta.igmp_unsupported = 1;
        transition accept;
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        verify(hdr.udp.length >= 8, error.MccBadLength);
        verify(hdr.udp.length + 20 == hdr.ipv4.total_len, error.MccBadLength);
        /* A p4mcc message has at least its common header; shorter
         * payloads are plain UDP (and must not be looked into). */
        mcc_room = hdr.udp.length >= MCC_COMMON_LEN + 8;
        transition select(mcc_room) {
            true: check_mcc;
            false: accept;
        }
    }

    state check_mcc {
        transition select(pkt.lookahead<bit<24>>()) {
            MCC_MAGIC_VERSION: parse_mcc;
            default: accept;   /* plain UDP */
        }
    }

    state parse_mcc {
        pkt.extract(hdr.mcc);
        verify(hdr.mcc.length + 8 == hdr.udp.length, error.MccBadLength);
        transition select(hdr.mcc.msg_type) {
            MCC_TFMCC_REPORT: parse_tfmcc_report;
            MCC_MTCP_ACK: parse_mtcp_ack;
            MCC_MTCP_WUPDATE: parse_mtcp_ack;
            MCC_VLMCC_CHALLENGE: parse_vlmcc_challenge;
            default: accept;
        }
    }

    state parse_tfmcc_report {
        verify(hdr.mcc.length >= MCC_COMMON_LEN + 32, error.MccShortMessage);   /* the report's body */
        pkt.extract(hdr.tfmcc_report);
        transition accept;
    }

    state parse_mtcp_ack {
        verify(hdr.mcc.length >= MCC_COMMON_LEN + 28, error.MccShortMessage);   /* the summary's body */
        pkt.extract(hdr.mtcp_ack);
        transition accept;
    }

    state parse_vlmcc_challenge {
        verify(hdr.mcc.length >= MCC_COMMON_LEN + 16, error.MccShortMessage);   /* the challenge's body */
        pkt.extract(hdr.vlmcc_challenge);
        transition accept;
    }
}

control MccVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4_option.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4_option.value },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

/* Only packets whose p4mcc body the switch rewrote (aggregation, filter
 * flags) are touched: their IPv4 checksum is recomputed; their UDP checksum
 * was updated in ingress (docs/wire-format.md). */
control MccComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5 && meta.rewritten == 1,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control MccDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.arp);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.ipv4_option);
        pkt.emit(hdr.igmp);
        pkt.emit(hdr.rec0);
        pkt.emit(hdr.rec1);
        pkt.emit(hdr.rec2);
        pkt.emit(hdr.rec3);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.mcc);
        pkt.emit(hdr.tfmcc_report);
        pkt.emit(hdr.mtcp_ack);
        pkt.emit(hdr.vlmcc_challenge);
    }
}

#endif
