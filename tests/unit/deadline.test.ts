import { withDeadline } from '../../src/data/deadline';

describe('withDeadline', () => {
  it('when the work settles in time, then its value or its error comes through', async () => {
    await expect(withDeadline(Promise.resolve(7), 1000, () => new Error('late'))).resolves.toBe(7);
    await expect(withDeadline(Promise.reject(new Error('own')), 1000, () => new Error('late'))).rejects.toThrow('own');
  });

  it('when the work does not settle in time, then the deadline error comes, however late the work settles', async () => {
    let settle: (v: number) => void = () => undefined;
    const work = new Promise<number>((resolve) => (settle = resolve));
    await expect(withDeadline(work, 20, () => new Error('late'))).rejects.toThrow('late');
    settle(1);
  });
});
