// The .wandb framing and records against files the real W&B SDK wrote
// (tools/make_wandb_goldens.py): the SDK's records re-framed by sft give its file byte for
// byte, and sft's encoders rebuild the SDK's history, summary, config and metric records
// byte for byte from their items.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "test_paths.h"
#include "train/protobuf_writer.h"
#include "train/wandb_log.h"
#include "train/wandb_records.h"
#include "wandb_test_reader.h"

namespace sft {

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> golden_records(const std::string& name) {
  const std::string file = read_bytes(test::source_path("tests/fixtures/wandb/" + name));
  std::string error;
  const auto chunks = test::read_wandb_chunks(file, &error);
  EXPECT_EQ(error, "");
  const auto records = test::join_wandb_records(chunks, &error);
  EXPECT_EQ(error, "");
  return records;
}

std::string frame_all(const std::vector<std::string>& records) {
  std::string out = wandb_log_header();
  for (const std::string& r : records) out += wandb_frame_record(r, out.size());
  return out;
}

}  // namespace

TEST(ProtoWriter, WireFormat) {
  ProtoWriter w;
  w.varint(1, 150);  // the protobuf documentation's example: 08 96 01
  w.bytes(2, "testing");
  w.varint(200, 1);  // a two-byte tag
  w.f64(3, 1.0);
  EXPECT_EQ(w.data(),
            std::string("\x08\x96\x01\x12\x07testing\xC0\x0C\x01\x19\0\0\0\0\0\0\xF0\x3F", 24));
}

TEST(WandbLog, ReframingTheSdksRecordsGivesItsFile) {
  const std::string file = read_bytes(test::source_path("tests/fixtures/wandb/sdk_blocks.wandb"));
  ASSERT_GT(file.size(), kWandbBlockSize);
  EXPECT_EQ(file.substr(0, 7), wandb_log_header());
  std::string error;
  const auto chunks = test::read_wandb_chunks(file, &error);
  ASSERT_EQ(error, "");
  bool crossed = false;
  for (const auto& c : chunks) crossed |= c.type == 2;
  EXPECT_TRUE(crossed) << "the golden should have a record across the first block boundary";
  const auto records = test::join_wandb_records(chunks, &error);
  ASSERT_EQ(error, "");
  EXPECT_EQ(frame_all(records), file);
}

TEST(WandbLog, BlockEdges) {
  std::string error;
  // The first record fills the first block exactly; the second leaves a header's room in the
  // second, so the third starts with an empty FIRST chunk there and ends in the third block.
  const std::vector<std::string> records = {std::string(kWandbBlockSize - 14, 'a'),
                                            std::string(kWandbBlockSize - 14, 'b'),
                                            std::string(10, 'c')};
  const std::string file = frame_all(records);
  EXPECT_EQ(file.size(), 2 * kWandbBlockSize + 7 + 10);
  // 7 bytes left in the block: an empty FIRST chunk fills them.
  std::string log = wandb_log_header();
  log += wandb_frame_record(std::string(kWandbBlockSize - 7 - 7 - 7, 'x'), log.size());
  ASSERT_EQ(log.size() % kWandbBlockSize, kWandbBlockSize - 7);
  log += wandb_frame_record("yz", log.size());
  EXPECT_EQ(static_cast<uint8_t>(log[kWandbBlockSize - 1]), 2u);  // FIRST, length 0
  EXPECT_EQ(log[kWandbBlockSize - 2], '\0');
  EXPECT_EQ(log[kWandbBlockSize - 3], '\0');
  // 3 bytes left: zero-filled, the next record starts the next block.
  std::string log2 = wandb_log_header();
  log2 += wandb_frame_record(std::string(kWandbBlockSize - 7 - 7 - 3, 'x'), log2.size());
  ASSERT_EQ(log2.size() % kWandbBlockSize, kWandbBlockSize - 3);
  log2 += wandb_frame_record("yz", log2.size());
  EXPECT_EQ(log2.substr(kWandbBlockSize - 3, 3), std::string(3, '\0'));
  EXPECT_EQ(log2.size(), kWandbBlockSize + 7 + 2);
  // 70,000 bytes: FIRST, MIDDLE, LAST.
  std::string log3 = wandb_log_header();
  std::string big(70000, 'q');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  log3 += wandb_frame_record(big, log3.size());
  for (const std::string& l : {log, log2, log3}) {
    const auto chunks = test::read_wandb_chunks(l, &error);
    ASSERT_EQ(error, "");
    (void)test::join_wandb_records(chunks, &error);
    ASSERT_EQ(error, "");
  }
  const auto chunks3 = test::read_wandb_chunks(log3, &error);
  ASSERT_EQ(chunks3.size(), 3u);
  EXPECT_EQ(chunks3[0].type, 2);
  EXPECT_EQ(chunks3[1].type, 3);
  EXPECT_EQ(chunks3[2].type, 4);
  EXPECT_EQ(test::join_wandb_records(chunks3, &error)[0], big);
  // Every case also reads back the records that went in.
  const auto back = test::join_wandb_records(test::read_wandb_chunks(file, &error), &error);
  EXPECT_EQ(back, records);
}

TEST(WandbRecords, RebuildTheSdksRecordsFromTheirItems) {
  int history = 0, summary = 0, config = 0, metric = 0;
  for (const std::string& raw : golden_records("trl_sft.wandb")) {
    const auto fields = test::parse_proto(raw);
    const auto num = test::find_field(fields, 1);
    const auto body = test::record_body(fields);
    ASSERT_TRUE(num && body);
    const auto n = static_cast<int64_t>(num->varint);
    auto body_of = [](const std::string& ours) {
      return test::record_body(test::parse_proto(ours))->bytes;
    };
    std::vector<WandbItem> items;
    for (const auto& [k, v] : test::record_items(body->bytes)) items.push_back({k, v});
    if (body->number == 2) {
      const auto step = test::find_field(test::parse_proto(body->bytes), 2);
      ASSERT_TRUE(step);
      const auto step_num = test::find_field(test::parse_proto(step->bytes), 1);
      const int64_t s = step_num ? static_cast<int64_t>(step_num->varint) : 0;
      EXPECT_EQ(body_of(encode_history_record(n, items, s)), body->bytes) << "record " << n;
      ++history;
    } else if (body->number == 3) {
      bool nested = false;  // wandb-core's own _wandb.runtime is a two-element path
      for (const auto& it : items) nested |= it.key.find('.') != std::string::npos;
      if (nested) continue;
      // A value set with run.summary[k] = v has its key as key, the per-row ones as a path.
      const auto item = test::find_field(test::parse_proto(body->bytes), 1);
      ASSERT_TRUE(item);
      const bool as_path = !test::find_field(test::parse_proto(item->bytes), 1);
      EXPECT_EQ(body_of(encode_summary_record(n, items, as_path)), body->bytes) << "record " << n;
      ++summary;
    } else if (body->number == 5) {
      EXPECT_EQ(body_of(encode_config_record(n, items)), body->bytes) << "record " << n;
      ++config;
    } else if (body->number == 12) {
      const auto m = test::parse_proto(body->bytes);
      auto str = [&](uint32_t f) {
        const auto p = test::find_field(m, f);
        return p ? p->bytes : std::string();
      };
      const bool step_sync = str(4) != "";
      EXPECT_EQ(body_of(encode_metric_record(n, str(1), str(2), str(4), step_sync)), body->bytes)
          << "record " << n;
      ++metric;
    }
  }
  EXPECT_EQ(history, 6);
  EXPECT_GE(summary, 11);
  EXPECT_EQ(config, 2);
  EXPECT_EQ(metric, 2);
}

TEST(WandbRecords, HeaderAndRecordLayoutMatchTheSdk) {
  const auto records = golden_records("trl_sft.wandb");
  const auto header = test::parse_proto(records.at(0));
  const auto body = test::record_body(header);
  ASSERT_TRUE(body && body->number == 21);
  const auto version = test::parse_proto(test::parse_proto(body->bytes).at(0).bytes);
  const std::string producer = version.at(0).bytes, min_consumer = version.at(1).bytes;
  const auto info = test::find_field(header, 200);
  ASSERT_TRUE(info);
  const std::string stream = test::parse_proto(info->bytes).at(0).bytes;
  EXPECT_EQ(encode_header_record(1, producer, min_consumer, stream), records.at(0));
}

TEST(WandbRecords, ValueJson) {
  EXPECT_EQ(wandb_value_json(Json(2e-5)), "2e-05");
  EXPECT_EQ(wandb_value_json(Json(0.1)), "0.1");
  EXPECT_EQ(wandb_value_json(Json(7)), "7");
  EXPECT_EQ(wandb_value_json(Json(std::nan(""))), "NaN");
  EXPECT_EQ(wandb_value_json(Json(-INFINITY)), "-Infinity");
  EXPECT_EQ(wandb_value_json(Json("a\"b")), "\"a\\\"b\"");
  EXPECT_EQ(wandb_value_json(Json(nullptr)), "null");
}

}  // namespace sft
