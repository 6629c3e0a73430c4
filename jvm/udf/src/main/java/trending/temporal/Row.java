package trending.temporal;

/**
 * One output: {@code value} holds over {@code [start, end)} ({@code end == END_OF_TIME}:
 * forever). The value is what the window gives: an aggregate's result (a {@link Long}, {@link
 * Double}, {@link java.math.BigInteger} or, for top_k, a list of them, largest first) or, for
 * altered events, the event's own value.
 */
public record Row(long start, long end, Object value) {}
