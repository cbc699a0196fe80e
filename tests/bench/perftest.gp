# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Plot of tests/bench/perftest.sh medians (perftest-report.py calls it):
#   gnuplot -e "outfile='x.png'; write_bw='a.dat'; send_bw='b.dat';
#               read_bw='c.dat'; write_lat='d.dat'" perftest.gp
# Each .dat: size, then the medians of kiwi siw kiwi-crc siw-crc tcp
# (NaN where a configuration has no result).

set terminal pngcairo size 1000,720 font "DejaVu Sans,9"
set output outfile
set datafile missing "NaN"
set logscale x 2
set xtics ("64" 64, "256" 256, "1K" 1024, "4K" 4096, "16K" 16384, \
	"64K" 65536, "256K" 262144, "1M" 1048576)
set yrange [0:*]
set grid
set key outside right top
set offsets graph 0.03, graph 0.03, 0, 0
set multiplot layout 2,2 title "kiwi vs siw vs TCP on a veth pair (QEMU TCG, medians)"

set ylabel "MiB/s"
set xlabel "message size"
set title "ib\\_write\\_bw (TCP: iperf3 -l size)"
plot write_bw u 1:2 w lp lw 2 t "kiwi", '' u 1:3 w lp lw 2 t "siw", \
	'' u 1:4 w lp dt 2 t "kiwi CRC", '' u 1:5 w lp dt 2 t "siw CRC", \
	'' u 1:6 w lp lc rgb "black" t "TCP"
set title "ib\\_send\\_bw (TCP: iperf3 -l size)"
plot send_bw u 1:2 w lp lw 2 t "kiwi", '' u 1:3 w lp lw 2 t "siw", \
	'' u 1:4 w lp dt 2 t "kiwi CRC", '' u 1:5 w lp dt 2 t "siw CRC", \
	'' u 1:6 w lp lc rgb "black" t "TCP"
set title "ib\\_read\\_bw (TCP: iperf3 -l size)"
plot read_bw u 1:2 w lp lw 2 t "kiwi", '' u 1:3 w lp lw 2 t "siw", \
	'' u 1:4 w lp dt 2 t "kiwi CRC", '' u 1:5 w lp dt 2 t "siw CRC", \
	'' u 1:6 w lp lc rgb "black" t "TCP"
set title "ib\\_write\\_lat, one way (TCP: sockperf ping-pong)"
set ylabel "microseconds"
set logscale y 10
set yrange [*:*]

plot write_lat u 1:2 w lp lw 2 t "kiwi", '' u 1:3 w lp lw 2 t "siw", \
	'' u 1:4 w lp dt 2 t "kiwi CRC", '' u 1:5 w lp dt 2 t "siw CRC", \
	'' u 1:6 w lp lc rgb "black" t "TCP"
unset multiplot
