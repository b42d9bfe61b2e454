// What benchmarks report about the machine, and the OpenBLAS core type ropelab asks for
// (util/machine.h; apps/runtime_env.cpp applies it before LibTorch loads).
#include "ropelab/util/machine.h"

#include <dlfcn.h>

#include "../test_util.h"

using namespace ropelab;

TEST(OpenblasCore, AvxFiveTwelveGetsSkylakeXUnlessOpenblasChoseAnAvxFiveTwelveCore) {
  // An AMD EPYC with AVX-512: OpenBLAS 0.3.21 picks its AVX2 kernels (Zen or Haswell).
  EXPECT_EQ(openblas_core_correction("Zen", true, true), "SkylakeX");
  EXPECT_EQ(openblas_core_correction("Haswell", true, true), "SkylakeX");
  EXPECT_EQ(openblas_core_correction("Prescott", true, true), "SkylakeX");
  for (const char* kept : {"SkylakeX", "skylakex", "Cooperlake", "SapphireRapids"})
    EXPECT_EQ(openblas_core_correction(kept, true, true), "") << kept;
}

TEST(OpenblasCore, AvxTwoGetsHaswellOnlyInPlaceOfAPreAvxTwoCore) {
  EXPECT_EQ(openblas_core_correction("Prescott", true, false), "Haswell");
  EXPECT_EQ(openblas_core_correction("sandybridge", true, false), "Haswell");
  EXPECT_EQ(openblas_core_correction("Zen", true, false), "");
  EXPECT_EQ(openblas_core_correction("Haswell", true, false), "");
  EXPECT_EQ(openblas_core_correction("Prescott", false, false), "");  // nothing better to ask for
}

TEST(MachineInfo, NamesTheCpuTheIsaAndTheBlas) {
  const auto info = machine_info();
  EXPECT_NE(info.cpu.find(" cores"), std::string::npos) << info.cpu;
  EXPECT_TRUE(info.aten_isa == "DEFAULT" || info.aten_isa == "AVX2" || info.aten_isa == "AVX512") << info.aten_isa;
  // with OpenBLAS loaded, its core type is one name, no spaces; with another BLAS, none
  EXPECT_EQ(info.blas_core.empty(), dlsym(RTLD_DEFAULT, "openblas_get_corename") == nullptr);
  EXPECT_EQ(info.blas_core.find(' '), std::string::npos) << info.blas_core;
}
