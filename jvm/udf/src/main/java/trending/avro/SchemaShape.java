package trending.avro;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.avro.Schema;

/**
 * Whether a writer schema from the registry is fit to read values with, before anything walks it.
 *
 * <p>Reading a value follows its schema recursively ({@link AvroCheck.Walk}, then Avro's own
 * reader), so some schemas that Avro parses would fail the task rather than the value: a record
 * that contains itself (a chain of values as deep as the bytes allow, or without end when the
 * recursion takes no bytes: a {@code StackOverflowError}), nesting deeper than {@link #MAX_DEPTH}
 * levels, more than {@link #MAX_TYPES} types once its named types are written out where they are
 * used (named types used twice at each level double at each level: reading one value would take
 * ages), or an array whose items take no bytes (a 10-byte count claims billions of them). Values
 * of such a schema are dead letters; the reasons name the schema's shape, never its text.
 *
 * <p>The job's own (reader) schemas are none of these. Parsing itself is bounded by Jackson's
 * nesting limit (1,000 levels of JSON, an error Avro reports as a parse error).
 */
final class SchemaShape {
  static final int MAX_DEPTH = 64;
  static final int MAX_TYPES = 100_000;

  private final Set<String> path = new HashSet<>();
  private final List<Schema> arrayItems = new ArrayList<>();
  private final Map<String, Boolean> emptyRecords = new HashMap<>();
  private int types;

  private SchemaShape() {}

  /** Why values of {@code schema} are not to be read, or null when they may be. */
  static String problem(Schema schema) {
    SchemaShape shape = new SchemaShape();
    try {
      shape.visit(schema, 1);
    } catch (Unfit unfit) {
      return unfit.getMessage();
    }
    for (Schema items : shape.arrayItems) {
      if (shape.takesNoBytes(items)) {
        return "has an array whose items take no bytes";
      }
    }
    return null;
  }

  private void visit(Schema schema, int depth) throws Unfit {
    if (++types > MAX_TYPES) {
      throw new Unfit("has more than " + MAX_TYPES + " types once its named types are expanded");
    }
    if (depth > MAX_DEPTH) {
      throw new Unfit("nests deeper than " + MAX_DEPTH + " levels");
    }
    switch (schema.getType()) {
      case RECORD -> {
        String name = schema.getFullName();
        if (!path.add(name)) {
          throw new Unfit("is recursive (" + name + " contains itself)");
        }
        for (Schema.Field field : schema.getFields()) {
          visit(field.schema(), depth + 1);
        }
        path.remove(name);
      }
      case ARRAY -> {
        arrayItems.add(schema.getElementType());
        visit(schema.getElementType(), depth + 1);
      }
      case MAP -> visit(schema.getValueType(), depth + 1);
      case UNION -> {
        for (Schema branch : schema.getTypes()) {
          visit(branch, depth + 1);
        }
      }
      default -> {}
    }
  }

  /** Whether a value of {@code schema} can be zero bytes (the schema is known not recursive). */
  private boolean takesNoBytes(Schema schema) {
    return switch (schema.getType()) {
      case NULL -> true;
      case FIXED -> schema.getFixedSize() == 0;
      case RECORD -> {
        Boolean known = emptyRecords.get(schema.getFullName());
        if (known == null) {
          known = schema.getFields().stream().allMatch(f -> takesNoBytes(f.schema()));
          emptyRecords.put(schema.getFullName(), known);
        }
        yield known;
      }
      default -> false; // a union index, a length, a count or a number takes at least a byte
    };
  }

  /** Why the visit stopped. */
  private static final class Unfit extends Exception {
    private static final long serialVersionUID = 1L;

    Unfit(String reason) {
      super(reason, null, false, false);
    }
  }
}
