// The SM clock a GPU reports as its maximum (boost) rate, for estimating its peak
// throughput. Apart from DeviceProperties because only throughput figures need it.
#pragma once

namespace zt {

// Kilohertz; throws zt::Error for a device index that does not exist.
int sm_clock_khz(int device);

}  // namespace zt
