/* p4mcc switch program: the stamp echo of feedback the switch folds or filters.
 *
 * A receiver writes into its feedback's own stamp byte the stamp of the data
 * it received since its previous feedback (hosts.stampwindow.StampWindow:
 * 0 when not every packet was stamped). Switches never stamp feedback, but
 * where they absorb some (aggregation, filtering) the message that goes up
 * stands for those it absorbed too, so it must carry all their echoes, or a
 * queue one receiver saw would never reach the sender.
 *
 * Per session, echo_acc holds the combination of the echoes absorbed since
 * the switch last sent a message up (echo_held = 1 while it holds one). A
 * message that goes up carries the combination of its own echo and that,
 * and the store empties; an absorbed one adds its echo to the store. The
 * combination is the stamp's own along a path: worst queue code (max),
 * tightest spare code (min); an echo without a queue code (0: not every
 * packet stamped) makes it 0, so the sender falls back whenever any path
 * it stands for was not stamped (docs/stamp.md, "Carried back"). The share
 * echo rides the same way in echo_share_acc: the smallest, 0 winning. */
#ifndef P4MCC_ECHO_P4
#define P4MCC_ECHO_P4

control FeedbackEcho(inout headers_t hdr, in metadata_t meta, in bool forward) {
    apply {
        bit<8> e = hdr.mcc.stamp;
        bit<1> held;
        echo_held.read(held, meta.sidx);
        if (held == 1) {
            bit<8> acc;
            echo_acc.read(acc, meta.sidx);
            if (acc[7:4] == 0 || e[7:4] == 0) {
                e = 0;
            } else {
                bit<4> q = acc[7:4];
                bit<4> s = acc[3:0];
                if (e[7:4] > q) { q = e[7:4]; }
                if (e[3:0] < s) { s = e[3:0]; }
                e = q ++ s;
            }
        }
        if (e[7:4] == 0) {
            e = 0;   /* no queue code: unstamped, whatever the low nibble held */
        }
        /* The share echo: the smallest, 0 (a receiver without one) winning. */
        bit<8> sh = hdr.mcc.share;
        if (held == 1) {
            bit<8> acc_share;
            echo_share_acc.read(acc_share, meta.sidx);
            if (acc_share == SHARE_NONE || sh == SHARE_NONE) {
                sh = SHARE_NONE;
            } else if (acc_share < sh) {
                sh = acc_share;
            }
        }
        if (forward) {
            hdr.mcc.stamp = e;
            hdr.mcc.share = sh;
            echo_held.write(meta.sidx, 0);
        } else {
            echo_acc.write(meta.sidx, e);
            echo_share_acc.write(meta.sidx, sh);
            echo_held.write(meta.sidx, 1);
        }
    }
}

#endif
