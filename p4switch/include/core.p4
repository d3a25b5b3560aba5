/* p4mcc built-in core library for P4_16.
 *
 * The declarations every P4_16 program can rely on: the built-in error
 * codes, the packet cursor externs used by parsers and deparsers, the
 * verify() primitive, the NoAction action and the basic match kinds.
 * Names and signatures follow the P4_16 language specification so that a
 * program compiled here also compiles unchanged with other P4_16 compilers.
 */
#ifndef _CORE_P4_
#define _CORE_P4_

/* Error codes raised by the packet parser. Their order is significant:
 * targets number errors in declaration order. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* The packet being parsed: a read cursor over its bytes. */
extern packet_in {
    /* Copy the next sizeof(hdr) bits into a fixed-size header and make it valid. */
    void extract<T>(out T hdr);
    /* Same for a header ending in a varbit field whose width is given in bits. */
    void extract<T>(out T variableSizeHeader,
                    in bit<32> variableFieldSizeInBits);
    /* Read bits ahead of the cursor without moving it. */
    T lookahead<T>();
    /* Move the cursor forward without copying. */
    void advance(in bit<32> sizeInBits);
    /* Packet length in bytes (may be unavailable on some targets). */
    bit<32> length();
}

/* The packet being built by a deparser. */
extern packet_out {
    /* Append a header (if valid) or every valid header of a struct/stack. */
    void emit<T>(in T hdr);
}

/* In a parser: when check is false, stop parsing with the given error. */
extern void verify(in bool check, in error toSignal);

/* An action that does nothing; the usual default action of a table. */
@noWarn("unused")
action NoAction() {}

/* Match kinds every target supports. */
match_kind {
    exact,
    ternary,
    lpm
}

/* Compile-time assertions. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif /* _CORE_P4_ */
