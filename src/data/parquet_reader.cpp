#include "data/parquet_reader.h"

#include <algorithm>

#include "data/parquet_column.h"
#include "data/parquet_thrift.h"
#include "io/mapped_file.h"

namespace sft::data {

// One node of the JSON shape: a leaf value, a struct (object) or a list (array).
struct ParquetField {
  enum class Kind { kLeaf, kStruct, kList } kind = Kind::kLeaf;
  std::string name;
  int def_present = 0;                    // definition level from which the value is not null
  int def_nonempty = 0;                   // kList: level from which the list has an element
  int rep_level = 0;                      // kList: repetition level of its elements
  std::vector<ParquetField> fields;       // kStruct
  std::unique_ptr<ParquetField> element;  // kList
  LeafColumn leaf;                        // kLeaf
};

namespace {

constexpr int kMaxNesting = 32;

// Builds the JSON shape from the flattened schema (depth-first, num_children per group).
class SchemaBuilder {
 public:
  SchemaBuilder(const std::vector<SchemaElement>& schema, const std::string& file)
      : schema_(schema), file_(file) {}

  std::vector<ParquetField> build_root(std::vector<LeafColumn>& leaves) {
    leaves_ = &leaves;
    const SchemaElement& root = schema_[0];
    size_t next = 1;
    std::vector<ParquetField> top;
    for (int i = 0; i < root.num_children; ++i) top.push_back(field(next, 0, 0, "", 1));
    if (next != schema_.size())
      fail_parquet(file_, "schema", "the schema has elements no group claims");
    return top;
  }

 private:
  // Reads the element at `next` (and its subtree); d/r are the parent's levels.
  ParquetField field(size_t& next, int d, int r, const std::string& prefix, int depth) {
    if (next >= schema_.size())
      fail_parquet(file_, "schema", "a group has more children than elements follow");
    if (depth > kMaxNesting) fail_parquet(file_, "schema", "nested too deeply");
    size_t node = next++;
    const SchemaElement& e = schema_[node];
    int dd = d + (e.repetition != Repetition::kRequired);
    int rr = r + (e.repetition == Repetition::kRepeated);
    std::string path = prefix.empty() ? e.name : prefix + "." + e.name;
    if (e.repetition != Repetition::kRepeated) return body(node, next, dd, rr, dd, path, depth);
    // A bare repeated field: a list whose absence reads as empty.
    ParquetField list;
    list.kind = ParquetField::Kind::kList;
    list.name = e.name;
    list.def_present = d;
    list.def_nonempty = dd;
    list.rep_level = rr;
    list.element = std::make_unique<ParquetField>(body(node, next, dd, rr, dd, path, depth));
    return list;
  }

  // The element at `node` with its own levels already counted in d/r.
  ParquetField body(size_t node, size_t& next, int d, int r, int def_present,
                    const std::string& path, int depth) {
    const SchemaElement& e = schema_[node];
    ParquetField f;
    f.name = e.name;
    f.def_present = def_present;
    const std::string where = "column '" + path + "'";
    if (!e.type) {
      if (e.num_children <= 0) fail_parquet(file_, where, "group without children");
      if (e.annotation == Annotation::kMap)
        fail_parquet(file_, where, "MAP columns are not supported");
      if (e.annotation == Annotation::kList) {
        if (e.num_children != 1) fail_parquet(file_, where, "LIST group must have one child");
        size_t rep_node = next++;
        if (rep_node >= schema_.size()) fail_parquet(file_, where, "LIST group lacks its child");
        const SchemaElement& rep = schema_[rep_node];
        if (rep.repetition != Repetition::kRepeated)
          fail_parquet(file_, where, "LIST child is not repeated");
        f.kind = ParquetField::Kind::kList;
        f.def_nonempty = d + 1;
        f.rep_level = r + 1;
        const std::string rep_path = path + "." + rep.name;
        // 3-level layout: the repeated group wraps the element. The spec's backward-
        // compatibility rules treat "array" and "<list>_tuple" groups as the element itself.
        bool wraps = !rep.type && rep.num_children == 1 && rep.name != "array" &&
                     rep.name != e.name + "_tuple";
        if (wraps) {
          f.element =
              std::make_unique<ParquetField>(field(next, d + 1, r + 1, rep_path, depth + 1));
        } else {
          f.element = std::make_unique<ParquetField>(
              body(rep_node, next, d + 1, r + 1, d + 1, rep_path, depth + 1));
        }
        return f;
      }
      if (e.annotation == Annotation::kOther)
        fail_parquet(file_, where, e.annotation_name + " groups are not supported");
      f.kind = ParquetField::Kind::kStruct;
      for (int i = 0; i < e.num_children; ++i)
        f.fields.push_back(field(next, d, r, path, depth + 1));
      return f;
    }
    check_supported(e, where);
    f.kind = ParquetField::Kind::kLeaf;
    f.leaf = LeafColumn{path, *e.type, e.annotation, d, r};
    leaves_->push_back(f.leaf);
    return f;
  }

  void check_supported(const SchemaElement& e, const std::string& where) {
    switch (*e.type) {
      case PhysicalType::kInt96:
        fail_parquet(file_, where, "INT96 (legacy timestamp) columns are not supported");
      case PhysicalType::kFixedLenByteArray:
        fail_parquet(file_, where,
                     "FIXED_LEN_BYTE_ARRAY columns (" +
                         (e.annotation_name.empty() ? "binary" : e.annotation_name) +
                         ") are not supported");
      case PhysicalType::kByteArray:
        if (e.annotation != Annotation::kString)
          fail_parquet(file_, where,
                       "binary columns (BYTE_ARRAY without a STRING annotation) are not supported");
        return;
      default:
        if (e.annotation == Annotation::kOther || e.annotation == Annotation::kString)
          fail_parquet(file_, where, e.annotation_name + " columns are not supported");
    }
  }

  const std::vector<SchemaElement>& schema_;
  const std::string& file_;
  std::vector<LeafColumn>* leaves_ = nullptr;
};

std::string type_name(const LeafColumn& leaf) {
  switch (leaf.type) {
    case PhysicalType::kBoolean:
      return "bool";
    case PhysicalType::kInt32:
      return leaf.annotation == Annotation::kUnsignedInt ? "uint32" : "int32";
    case PhysicalType::kInt64:
      return leaf.annotation == Annotation::kUnsignedInt ? "uint64" : "int64";
    case PhysicalType::kFloat:
      return "float";
    case PhysicalType::kDouble:
      return "double";
    default:
      return "string";
  }
}

std::string signature_of(const ParquetField& f) {
  switch (f.kind) {
    case ParquetField::Kind::kLeaf:
      return type_name(f.leaf);
    case ParquetField::Kind::kList:
      return "list<" + signature_of(*f.element) + ">";
    case ParquetField::Kind::kStruct: {
      std::string s = "struct<";
      for (size_t i = 0; i < f.fields.size(); ++i)
        s += (i ? ", " : "") + f.fields[i].name + ": " + signature_of(f.fields[i]);
      return s + ">";
    }
  }
  return "";
}

void collect_paths(const ParquetField& f, std::vector<const ParquetField*>& path,
                   std::vector<std::vector<const ParquetField*>>& out) {
  path.push_back(&f);
  if (f.kind == ParquetField::Kind::kLeaf) out.push_back(path);
  if (f.kind == ParquetField::Kind::kList) collect_paths(*f.element, path, out);
  for (const ParquetField& c : f.fields) collect_paths(c, path, out);
  path.pop_back();
}

// Places one leaf column's values into the rows (see the Dremel note in the header).
void assemble(std::vector<RowJson>& rows, const std::vector<const ParquetField*>& path,
              ColumnValues& col, const std::string& file) {
  const LeafColumn& leaf = path.back()->leaf;
  const std::string where = "column '" + leaf.name + "'";
  std::vector<size_t> index(path.size(), 0);
  size_t row = 0, value = 0;
  bool started = false;
  for (size_t i = 0; i < col.num_levels; ++i) {
    int d = col.def.empty() ? leaf.max_def : col.def[i];
    int r = col.rep.empty() ? 0 : col.rep[i];
    if (r == 0) {
      if (started) ++row;
      started = true;
      if (row >= rows.size()) fail_parquet(file, where, "more rows than the row group declares");
    }
    RowJson* slot = &rows[row][path[0]->name];
    for (size_t k = 0; k < path.size(); ++k) {
      const ParquetField& f = *path[k];
      if (d < f.def_present) break;  // null: the slot stays null
      if (f.kind == ParquetField::Kind::kLeaf) {
        if (value >= col.values.size())
          fail_parquet(file, where, "definition levels promise more values than the pages hold");
        *slot = std::move(col.values[value++]);
      } else if (f.kind == ParquetField::Kind::kStruct) {
        if (!slot->is_object()) *slot = RowJson::object();
        slot = &(*slot)[path[k + 1]->name];
      } else {
        if (!slot->is_array()) *slot = RowJson::array();
        if (d < f.def_nonempty) break;  // an empty list
        if (r < f.rep_level) {
          index[k] = 0;
        } else if (r == f.rep_level) {
          ++index[k];
        }
        if (index[k] == slot->size()) {
          slot->push_back(nullptr);
        } else if (index[k] > slot->size()) {
          fail_parquet(file, where, "repetition levels skip a list element");
        }
        slot = &(*slot)[index[k]];
      }
    }
  }
  if (value != col.values.size())
    fail_parquet(file, where, "the pages hold more values than the definition levels use");
  if (!rows.empty() && (!started || row + 1 != rows.size()))
    fail_parquet(file, where,
                 "has " + std::to_string(started ? row + 1 : 0) +
                     " rows but the row group declares " + std::to_string(rows.size()));
}

}  // namespace

ParquetFile::ParquetFile() = default;
ParquetFile::ParquetFile(ParquetFile&&) noexcept = default;
ParquetFile& ParquetFile::operator=(ParquetFile&&) noexcept = default;
ParquetFile::~ParquetFile() = default;

ParquetFile ParquetFile::open(const std::string& path) {
  ParquetFile f;
  f.mapping_ = MappedFile::open(path);
  f.bytes_ = {reinterpret_cast<const uint8_t*>(f.mapping_->bytes().data()), f.mapping_->size()};
  f.name_ = path;
  f.init();
  return f;
}

ParquetFile ParquetFile::from_bytes(std::span<const uint8_t> bytes, const std::string& name) {
  ParquetFile f;
  f.bytes_ = bytes;
  f.name_ = name;
  f.init();
  return f;
}

void ParquetFile::init() {
  metadata_ = parse_file_metadata(bytes_, name_);
  if (metadata_.schema[0].type) fail_parquet(name_, "schema", "the root is not a group");
  std::vector<LeafColumn> leaves;
  top_ = SchemaBuilder(metadata_.schema, name_).build_root(leaves);
  std::vector<const ParquetField*> path;
  for (const ParquetField& f : top_) collect_paths(f, path, leaf_paths_);
  for (size_t i = 0; i < top_.size(); ++i)
    signature_ += (i ? ", " : "") + top_[i].name + ": " + signature_of(top_[i]);
  int64_t total = 0;
  for (size_t g = 0; g < metadata_.row_groups.size(); ++g) {
    const RowGroupMeta& rg = metadata_.row_groups[g];
    if (rg.columns.size() != leaf_paths_.size())
      fail_parquet(name_, "row group " + std::to_string(g),
                   "has " + std::to_string(rg.columns.size()) + " column chunks, the schema " +
                       std::to_string(leaf_paths_.size()) + " leaf columns");
    if (rg.num_rows < 0)
      fail_parquet(name_, "row group " + std::to_string(g), "negative row count");
    total += rg.num_rows;
  }
  if (total != metadata_.num_rows)
    fail_parquet(name_, "footer",
                 "row groups hold " + std::to_string(total) + " rows but the file declares " +
                     std::to_string(metadata_.num_rows));
}

std::vector<RowJson> ParquetFile::read_row_group(size_t index) const {
  const RowGroupMeta& rg = metadata_.row_groups.at(index);
  std::vector<ColumnValues> columns;
  columns.reserve(leaf_paths_.size());
  for (size_t c = 0; c < leaf_paths_.size(); ++c) {
    const LeafColumn& leaf = leaf_paths_[c].back()->leaf;
    const ColumnChunkMeta& meta = rg.columns[c];
    if (meta.type != leaf.type)
      fail_parquet(name_, "column '" + leaf.name + "'", "chunk type differs from the schema");
    columns.push_back(read_column_chunk(bytes_, meta, leaf, name_));
    // Each row takes at least one level slot; checking before allocating the rows bounds them.
    if (uint64_t(rg.num_rows) > columns.back().num_levels)
      fail_parquet(
          name_, "column '" + leaf.name + "'",
          "holds fewer values than the row group's " + std::to_string(rg.num_rows) + " rows");
  }
  std::vector<RowJson> rows(rg.num_rows, RowJson::object());
  for (size_t c = 0; c < leaf_paths_.size(); ++c) assemble(rows, leaf_paths_[c], columns[c], name_);
  return rows;
}

void ParquetFile::for_each_row(const std::function<void(RowJson&&, uint64_t)>& fn) const {
  uint64_t row = 0;
  for (size_t g = 0; g < metadata_.row_groups.size(); ++g) {
    std::vector<RowJson> rows = read_row_group(g);
    for (RowJson& r : rows) fn(std::move(r), row++);
  }
}

}  // namespace sft::data
