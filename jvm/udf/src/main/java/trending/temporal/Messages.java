package trending.temporal;

/** How errors name events and edges (as the Python core's messages do). */
final class Messages {
  private Messages() {}

  /** An event by its id, else by its start time. */
  static String describe(String id, long start) {
    return id != null ? "event " + PythonText.repr(id) : "event starting " + Timeline.format(start);
  }
}
