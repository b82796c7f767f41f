#include <gtest/gtest.h>

#include <random>

#include "nuvec/nuvec.h"
#include "tests/io/io_test_util.h"
#include "tests/support/reference.h"

namespace nuvec::test {
namespace {

// NumPy's names of the dtypes it shares with nuvec (all but bfloat16).
const std::vector<std::pair<Dtype, std::string>> kNumpyDtypes = {
    {bool_, "bool"},      {uint8, "uint8"},     {uint16, "uint16"},      {uint32, "uint32"}, {uint64, "uint64"},
    {int8, "int8"},       {int16, "int16"},     {int32, "int32"},        {int64, "int64"},   {float16, "float16"},
    {float32, "float32"}, {float64, "float64"}, {complex64, "complex64"}};

// Python that builds a deterministic array `x` of a dtype and shape (NumPy is the reference for its layout).
std::string make_x(const std::string& dtype, const std::string& shape) {
  return "n = int(np.prod(" + shape +
         "))\n"
         "v = (np.arange(n) * 7 % 23 - 11)\n"
         "x = (v % 2 == 1) if '" +
         dtype + "' == 'bool' else v.astype('" + dtype +
         "')\n"
         "if '" +
         dtype + "'.startswith('uint'): x = (np.arange(n) * 7 % 23).astype('" + dtype +
         "')\n"
         "if '" +
         dtype +
         "' == 'complex64': x = (v + 0.5j * v[::-1]).astype('complex64')\n"
         "x = x.reshape(" +
         shape + ")\n";
}

TEST(Npy, LoadsFilesWrittenByNumpyInEveryOrderAndByteOrder) {
  TempDir dir;
  const std::vector<std::string> variants = {"C<", "C>", "F<", "F>"};
  // One Python run writes every file: x in the variant's order and byte order, and its C-order little-endian bytes.
  std::string script;
  for (const auto& [dtype, name] : kNumpyDtypes) {
    for (const auto& variant : variants) {
      std::string stem = dir.path(name + variant.substr(0, 1) + (variant[1] == '<' ? "le" : "be"));
      script += make_x(name, variant[0] == 'F' ? "(3, 4, 2)" : "(2, 5)") + "y = x.astype(x.dtype.newbyteorder('" +
                variant.substr(1) + "'))\n" + (variant[0] == 'F' ? "y = np.asfortranarray(y)\n" : "") + "np.save('" +
                stem + ".npy', y)\n" + "open('" + stem + ".raw', 'wb').write(np.ascontiguousarray(x).tobytes())\n";
    }
  }
  run_python(script);
  for (const auto& [dtype, name] : kNumpyDtypes) {
    for (const auto& variant : variants) {
      std::string stem = dir.path(name + variant.substr(0, 1) + (variant[1] == '<' ? "le" : "be"));
      array a = load(stem + ".npy");
      EXPECT_EQ(a.dtype(), dtype) << name << " " << variant;
      EXPECT_EQ(a.shape(), variant[0] == 'F' ? Shape({3, 4, 2}) : Shape({2, 5}));
      EXPECT_EQ(raw_bytes(a), read_file(stem + ".raw")) << name << " " << variant;
    }
  }
}

TEST(Npy, NumpyLoadsWhatNuvecSaves) {
  TempDir dir;
  std::mt19937 rng(11);
  std::string script;
  std::vector<std::pair<std::string, array>> written;
  for (const auto& [dtype, name] : kNumpyDtypes) {
    array a = random_array({3, 4}, dtype, rng);
    for (bool fortran : {false, true}) {
      for (bool big : {false, true}) {
        std::string stem = dir.path(name + (fortran ? "F" : "C") + (big ? "be" : "le"));
        io::save_npy(stem + ".npy", a, {fortran, big});
        written.emplace_back(stem, a);
        EXPECT_TRUE(array_equal(load(std::make_shared<io::FileReader>(stem + ".npy")), a).item<bool>());
        script += "x = np.load('" + stem +
                  ".npy')\n"
                  "assert x.dtype.newbyteorder('=') == np.dtype('" +
                  name +
                  "'), x.dtype\n"
                  "assert x.dtype.byteorder in " +
                  (big ? "('>', '|')" : "('=', '<', '|')") +
                  ", x.dtype\n"
                  "assert x.flags.f_contiguous == " +
                  (fortran ? "True" : "False") +
                  "\n"
                  "open('" +
                  stem + ".raw', 'wb').write(np.ascontiguousarray(x).astype(x.dtype.newbyteorder('<')).tobytes())\n";
      }
    }
  }
  run_python(script);
  for (const auto& [stem, a] : written) {
    EXPECT_EQ(read_file(stem + ".raw"), raw_bytes(a)) << stem;
  }
}

TEST(Npy, EveryDtypeAndEdgeShapeRoundTrips) {
  TempDir dir;
  std::mt19937 rng(5);
  for (Dtype dtype : all_dtypes) {
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{1}, Shape{2, 0, 3}, Shape{4, 1, 3}}) {
      array a = random_array(shape, dtype, rng);
      save(dir.path("x"), a);  // ".npy" is appended
      array b = load(dir.path("x.npy"));
      EXPECT_EQ(b.dtype(), dtype);
      EXPECT_EQ(b.shape(), shape);
      EXPECT_EQ(raw_bytes(b), raw_bytes(a)) << dtype_name(dtype) << " " << shape_string(shape);
    }
  }
  io::save_npy(dir.path("be.npy"), zeros({0, 2}, float32), {true, true});
  EXPECT_EQ(load(dir.path("be.npy")).shape(), Shape({0, 2}));
  // A non-contiguous view is saved by value.
  array t = transpose(reshape(arange(12, float32), {3, 4}));
  save(dir.path("t.npy"), t);
  EXPECT_TRUE(array_equal(load(dir.path("t.npy")), t).item<bool>());
  // Through the Writer and Reader interface.
  save(std::make_shared<io::FileWriter>(dir.path("w.npy")), t);
  EXPECT_TRUE(array_equal(load(std::make_shared<io::FileReader>(dir.path("w.npy"))), t).item<bool>());
}

TEST(Npz, LoadsSavezAndSavezCompressed) {
  TempDir dir;
  for (std::string fn : {"savez", "savez_compressed"}) {
    std::string script;
    for (const auto& [dtype, name] : kNumpyDtypes) {
      script += make_x(name, "(3, 2)") + "arrays['" + name + "'] = x\n";
    }
    run_python("arrays = {}\n" + script + "np." + fn + "('" + dir.path("x.npz") + "', **arrays)\n" +
               "for k, v in arrays.items(): open('" + dir.path("") + "' + k + '.raw', 'wb').write(v.tobytes())\n");
    auto loaded = io::load_npz(dir.path("x.npz"));
    EXPECT_EQ(loaded.size(), kNumpyDtypes.size());
    for (const auto& [dtype, name] : kNumpyDtypes) {
      ASSERT_EQ(loaded.count(name), 1u) << name;
      EXPECT_EQ(loaded.at(name).dtype(), dtype);
      EXPECT_EQ(raw_bytes(loaded.at(name)), read_file(dir.path(name + ".raw"))) << fn << " " << name;
    }
  }
}

TEST(Npz, NumpyLoadsWhatNuvecSaves) {
  TempDir dir;
  std::mt19937 rng(9);
  std::unordered_map<std::string, array> arrays;
  for (const auto& [dtype, name] : kNumpyDtypes) {
    arrays.insert_or_assign(name, random_array({2, 3}, dtype, rng));
  }
  arrays.insert_or_assign("bf16", random_array({4}, bfloat16, rng));
  for (bool compressed : {false, true}) {
    io::save_npz(dir.path("x.npz"), arrays, compressed);
    run_python("z = np.load('" + dir.path("x.npz") +
               "')\n"
               "for k in z.files: open('" +
               dir.path("") +
               "' + k + '.raw', 'wb').write(z[k].tobytes())\n"
               "import zipfile\n"
               "assert all(i.compress_type == " +
               (compressed ? "8" : "0") + " for i in zipfile.ZipFile('" + dir.path("x.npz") + "').infolist())\n");
    auto back = io::load_npz(dir.path("x.npz"));
    for (const auto& [name, a] : arrays) {
      EXPECT_EQ(read_file(dir.path(name + ".raw")), raw_bytes(a)) << name;
      EXPECT_EQ(back.at(name).dtype(), a.dtype());
      EXPECT_EQ(raw_bytes(back.at(name)), raw_bytes(a)) << name;
    }
  }
}

TEST(Npy, MalformedFilesNameTheFileAndTheProblem) {
  TempDir dir;
  std::string path = dir.path("bad.npy");
  auto error_for = [&](const std::vector<unsigned char>& bytes) {
    write_file(path, bytes);
    std::string message = error_of([&] { load(path); });
    EXPECT_NE(message.find(path), std::string::npos) << message;
    return message;
  };
  auto header = [](const std::string& dict, int version = 1) {
    std::vector<unsigned char> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(version), 0};
    if (version == 1) {
      put<uint16_t>(out, static_cast<uint16_t>(dict.size()));
    } else {
      put<uint32_t>(out, static_cast<uint32_t>(dict.size()));
    }
    out.insert(out.end(), dict.begin(), dict.end());
    return out;
  };
  EXPECT_NE(error_for({'P', 'K', 3, 4}).find("truncated"), std::string::npos);
  EXPECT_NE(error_for({'N', 'U', 'M', 'P', 'Y', 'x', 1, 0}).find("wrong magic"), std::string::npos);
  EXPECT_NE(error_for(header("{}", 7)).find("unsupported format version 7"), std::string::npos);
  EXPECT_NE(error_for(header("{'descr': '<U10', 'fortran_order': False, 'shape': (1,), }"))
                .find("unsupported dtype descr '<U10'"),
            std::string::npos);
  EXPECT_NE(error_for(header("{'descr': '<f4', 'shape': (1,), }")).find("needs 'descr'"), std::string::npos);
  EXPECT_NE(error_for(header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }")).find("True or False"),
            std::string::npos);
  EXPECT_NE(error_for(header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }")).find("truncated data"),
            std::string::npos);
  EXPECT_NE(error_for(header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 1), }"))
                .find("larger than 2^31 - 1"),
            std::string::npos);
  EXPECT_NE(error_for(header("{'descr': '<f8', 'fortran_order': False, 'shape': (2147483647, 2147483647, "
                             "2147483647, 2147483647), }"))
                .find("overflows"),
            std::string::npos);
  EXPECT_NE(error_for(header("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 2147483647, 2147483647, "
                             "2147483647), }"))
                .find("overflows"),
            std::string::npos);
  auto long_header = header("{'descr': '<f4'", 2);
  long_header[8] = 0xFF;  // the header length now runs past the end
  EXPECT_NE(error_for(long_header).find("truncated file: the header needs"), std::string::npos);
}

TEST(Npz, MalformedArchivesNameTheFileAndTheProblem) {
  TempDir dir;
  std::string path = dir.path("bad.npz");
  auto error_for = [&](const std::vector<unsigned char>& bytes) {
    write_file(path, bytes);
    std::string message = error_of([&] { io::load_npz(path); });
    EXPECT_NE(message.find(path), std::string::npos) << message;
    return message;
  };
  EXPECT_NE(error_for({1, 2, 3}).find("not a ZIP archive"), std::string::npos);
  EXPECT_NE(error_for(std::vector<unsigned char>(100, 0)).find("no end of central directory"), std::string::npos);
  io::save_npz(path, {{"a", arange(100, float32)}}, true);
  auto good = read_file(path);
  EXPECT_NE(error_for({good.begin() + 10, good.end()}).find("signature"), std::string::npos);
  size_t central = good.size() - 22 - 46 - 5;  // the one central header, for "a.npy"
  auto bad_crc = good;
  bad_crc[central + 16] ^= 1;
  EXPECT_NE(error_for(bad_crc).find("CRC-32 mismatch"), std::string::npos);
  auto past_end = good;
  past_end[good.size() - 22 + 16] = 0xF0;  // the central directory offset
  EXPECT_NE(error_for(past_end).find("central directory lies past the end"), std::string::npos);
  auto many = good;
  many[good.size() - 22 + 10] = 0xFF;  // entry count 255 in a 51-byte directory
  EXPECT_NE(error_for(many).find("claims 255 entries"), std::string::npos);
}

}  // namespace
}  // namespace nuvec::test
