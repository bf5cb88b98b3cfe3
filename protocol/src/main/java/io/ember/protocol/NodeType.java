package io.ember.protocol;

/** The kinds of namespace entries. */
public enum NodeType {
  /** A sequence of bytes written once by one writer and published on close. */
  FILE(1),
  /** A directory of other entries. */
  DIRECTORY(2),
  /**
   * A directory whose children (files) are written by many writers at once and read back whole, in
   * name order, by one reader.
   */
  MULTIFILE(3);

  private final int code;

  NodeType(int code) {
    this.code = code;
  }

  /** The number sent on the wire. */
  public int code() {
    return code;
  }

  /** True for the types that hold children. */
  public boolean isContainer() {
    return this != FILE;
  }

  /**
   * The type for a wire number.
   *
   * @throws MalformedFrameException for unknown numbers
   */
  public static NodeType fromCode(int code) throws MalformedFrameException {
    for (NodeType t : values()) {
      if (t.code == code) {
        return t;
      }
    }
    throw new MalformedFrameException("unknown node type " + code);
  }
}
