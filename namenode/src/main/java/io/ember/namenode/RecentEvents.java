package io.ember.namenode;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.List;

/** The last warnings a server logged, kept for its status page. Thread-safe. */
final class RecentEvents {
  /** A warning and when it happened (ISO-8601, UTC). */
  record Event(String time, String message) {}

  private final int capacity;
  private final ArrayDeque<Event> events = new ArrayDeque<>();

  RecentEvents(int capacity) {
    this.capacity = capacity;
  }

  synchronized void add(String message) {
    if (events.size() == capacity) {
      events.removeFirst();
    }
    events.addLast(new Event(Instant.now().toString(), message));
  }

  /** The events kept, oldest first. */
  synchronized List<Event> list() {
    return List.copyOf(events);
  }
}
