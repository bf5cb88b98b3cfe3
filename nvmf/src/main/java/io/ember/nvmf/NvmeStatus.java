package io.ember.nvmf;

/**
 * Decodes the 15-bit NVMe status field of a completion queue entry (CQE DW3 bits 31:17) into words.
 *
 * <p>Layout: SC bits 7:0, SCT bits 10:8, CRD bits 12:11, More bit 13, DNR bit 14.
 */
public final class NvmeStatus {
  private NvmeStatus() {}

  /** Status code (SC). */
  public static int sc(int status) {
    return status & 0xFF;
  }

  /** Status code type (SCT). */
  public static int sct(int status) {
    return (status >> 8) & 7;
  }

  /** Do Not Retry: the same command will fail again. */
  public static boolean dnr(int status) {
    return (status & (1 << 14)) != 0;
  }

  /** Name of a status code type. */
  public static String sctName(int sct) {
    switch (sct) {
      case 0:
        return "Generic Command Status";
      case 1:
        return "Command Specific Status";
      case 2:
        return "Media and Data Integrity Errors";
      case 3:
        return "Path Related Status";
      case 7:
        return "Vendor Specific";
      default:
        return "Reserved status code type " + sct;
    }
  }

  /**
   * Describes a status code in words, e.g. {@code "LBA Out of Range"}.
   *
   * @param sct status code type
   * @param sc status code
   * @param fabricsConnect whether the status answers a Fabrics Connect (command-specific codes
   *     80h-84h mean different things there than for NVM commands)
   */
  public static String describe(int sct, int sc, boolean fabricsConnect) {
    if (sct == 0) {
      switch (sc) {
        case 0x00:
          return "Successful Completion";
        case 0x01:
          return "Invalid Command Opcode";
        case 0x02:
          return "Invalid Field in Command";
        case 0x03:
          return "Command ID Conflict";
        case 0x04:
          return "Data Transfer Error";
        case 0x05:
          return "Commands Aborted due to Power Loss Notification";
        case 0x06:
          return "Internal Error";
        case 0x07:
          return "Command Abort Requested";
        case 0x08:
          return "Command Aborted due to SQ Deletion";
        case 0x09:
          return "Command Aborted due to Failed Fused Command";
        case 0x0A:
          return "Command Aborted due to Missing Fused Command";
        case 0x0B:
          return "Invalid Namespace or Format";
        case 0x0C:
          return "Command Sequence Error";
        case 0x0D:
          return "Invalid SGL Segment Descriptor";
        case 0x0E:
          return "Invalid Number of SGL Descriptors";
        case 0x0F:
          return "Data SGL Length Invalid";
        case 0x10:
          return "Metadata SGL Length Invalid";
        case 0x11:
          return "SGL Descriptor Type Invalid";
        case 0x15:
          return "Operation Denied";
        case 0x16:
          return "SGL Offset Invalid";
        case 0x18:
          return "Host Identifier Inconsistent Format";
        case 0x19:
          return "Keep Alive Timer Expired";
        case 0x1A:
          return "Keep Alive Timeout Invalid";
        case 0x20:
          return "Namespace is Write Protected";
        case 0x21:
          return "Command Interrupted";
        case 0x22:
          return "Transient Transport Error";
        case 0x80:
          return "LBA Out of Range";
        case 0x81:
          return "Capacity Exceeded";
        case 0x82:
          return "Namespace Not Ready";
        case 0x83:
          return "Reservation Conflict";
        default:
          return String.format("Generic status 0x%02x", sc);
      }
    }
    if (sct == 1) {
      if (fabricsConnect) {
        switch (sc) {
          case 0x80:
            return "Connect Incompatible Format";
          case 0x81:
            return "Connect Controller Busy";
          case 0x82:
            return "Connect Invalid Parameters";
          case 0x83:
            return "Connect Restart Discovery";
          case 0x84:
            return "Connect Invalid Host";
          default:
            break;
        }
      }
      switch (sc) {
        case 0x00:
          return "Completion Queue Invalid";
        case 0x01:
          return "Invalid Queue Identifier";
        case 0x02:
          return "Invalid Queue Size";
        case 0x03:
          return "Abort Command Limit Exceeded";
        case 0x05:
          return "Asynchronous Event Request Limit Exceeded";
        case 0x09:
          return "Invalid Log Page";
        case 0x0D:
          return "Feature Identifier Not Saveable";
        case 0x0E:
          return "Feature Not Changeable";
        case 0x0F:
          return "Feature Not Namespace Specific";
        case 0x80:
          return "Conflicting Attributes";
        case 0x81:
          return "Invalid Protection Information";
        case 0x82:
          return "Attempted Write to Read Only Range";
        default:
          return String.format("Command specific status 0x%02x", sc);
      }
    }
    if (sct == 2) {
      switch (sc) {
        case 0x80:
          return "Write Fault";
        case 0x81:
          return "Unrecovered Read Error";
        case 0x82:
          return "End-to-end Guard Check Error";
        case 0x86:
          return "Access Denied";
        case 0x87:
          return "Deallocated or Unwritten Logical Block";
        default:
          return String.format("Media error 0x%02x", sc);
      }
    }
    if (sct == 3) {
      switch (sc) {
        case 0x00:
          return "Internal Path Error";
        case 0x60:
          return "Controller Pathing Error";
        case 0x70:
          return "Host Pathing Error";
        case 0x71:
          return "Command Aborted By Host";
        default:
          return String.format("Path status 0x%02x", sc);
      }
    }
    return String.format("%s 0x%02x", sctName(sct), sc);
  }
}
