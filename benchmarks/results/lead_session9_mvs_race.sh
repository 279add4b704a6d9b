# is tests/mvs/test_mvs_review_s8_gpu.py::test_back_to_back... flaky on HEAD and on 4e90511 (session start)?
export PYTHONUNBUFFERED=1
L=$OUT/mvsrace; mkdir -p $L
mkdir -p /tmp/base && tar -xzf .carry-lead9/base.tar.gz -C /tmp/base
T=tests/mvs/test_mvs_review_s8_gpu.py
for i in 1 2 3 4 5 6 7 8; do
  for side in head base; do
    if [ $side = head ]; then d=$PWD; else d=/tmp/base; fi
    r=$(cd $d && timeout 40 python3 -m pytest -m gpu $T tests/mvs/test_mvs_setup_gpu.py -q -p no:cacheprovider -o addopts="" 2>&1 | tail -1)
    echo "$i $side $r" | tee -a $L/log.txt
  done
done
(cd $PWD && timeout 60 python3 -m pytest -m gpu $T -q -p no:cacheprovider -o addopts="" -k back_to_back 2>&1 | grep -E "Error|error|passed|failed" | head -20) | tee -a $L/log.txt
